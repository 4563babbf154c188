import Foundation
import Testing

@testable import LyreReceiver

/// The web API's messages (Protocol/control-api.md §3) against Protocol/vectors/control-api.json: how each
/// client message is read, and the reply frame each control answer makes. Compared as JSON values.
struct WebAPITests {
    static var vectors: [String: Any] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Protocol/vectors/control-api.json")
        let data = (try? Data(contentsOf: url)) ?? Data()
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
    }

    @Test func clientMessagesAreReadAsTheVectorsSay() throws {
        let messages = try #require(Self.vectors["messages"] as? [[String: Any]], "Protocol/vectors/control-api.json is missing")
        #expect(messages.count >= 10)
        for vector in messages {
            let text = try #require(vector["text"] as? String)
            let read = WebAPI.command(text)
            if vector["error"] as? Bool == true {
                if case .success(let command) = read { Issue.record("\(text) was read as \(command), not refused") }
                continue
            }
            let expected = try #require(vector["command"] as? [String: Any])
            guard case .success(let command) = read else {
                Issue.record("\(text) was refused")
                continue
            }
            #expect(command.command == expected["command"] as? String, "\(text)")
            #expect(command.id == expected["id"] as? Int, "\(text)")
        }
    }

    @Test func answersMakeTheVectorsReplyFrames() throws {
        let replies = try #require(Self.vectors["replies"] as? [[String: Any]], "Protocol/vectors/control-api.json is missing")
        for vector in replies {
            let answer = try #require(vector["answer"] as? [String: Any])
            let text = answer["text"] as? String ?? ""
            let reply = answer["ok"] as? Bool == true
                ? ControlReply.ok(text, json: answer["json"] as? Bool ?? false)
                : ControlReply.error(answer["kind"] as? String ?? "", text)
            let frame = WebAPI.reply(id: vector["id"] as? Int, reply)
            let made = try JSONSerialization.jsonObject(with: Data(frame.utf8)) as? NSDictionary
            let expected = try #require(vector["frame"] as? [String: Any]) as NSDictionary
            #expect(made == expected, "made \(frame)")
        }
    }

    /// The control socket's lines are what they were before the web API shared the code: a JSON string result
    /// (unpair's id) goes bare, others as they are.
    @Test func theSocketsLinesAreUnchanged() {
        #expect(ControlReply.ok("").line == "ok")
        #expect(ControlReply.ok("\"12AB\"", json: true).line == "ok 12AB")
        #expect(ControlReply.ok("{\"a\":1}", json: true).line == "ok {\"a\":1}")
        #expect(ControlReply.error("unknown", "no such").line == "error unknown: no such")
    }
}
