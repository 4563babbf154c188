import LyreWire

extension RTCPPacket {
    /// The packets of an RTCP datagram from the peer, read through SRTCP when the session is paired (`srtcp`,
    /// its receive side): how both ends take the other's RTCP (streaming.md §4, pairing.md §6), the receiver
    /// its sender's reports and the sender its receivers' NACKs and reception reports. What does not verify or
    /// came before is the SRTCP failure; what does not parse as RTCP is `malformed`. The caller counts it.
    public static func read(_ datagram: [UInt8], through srtcp: SRTPSession?) -> Result<[RTCPPacket], SRTPSession.Failure> {
        let plain: [UInt8]
        switch srtcp.map({ $0.unprotectRTCP(datagram) }) ?? .success(datagram) {
        case .success(let bytes): plain = bytes
        case .failure(let failure): return .failure(failure)
        }
        do { return .success(try RTCPPacket.all(in: plain)) } catch { return .failure(.malformed) }
    }
}
