import Crypto
import FoundationEssentials
import NIOCore
import NIOSSL
import X509

/// A device's TLS identity (Protocol/pairing.md §6): a self-signed X.509 certificate over its long-term
/// Ed25519 key, made at start-up and never checked for dates or issuers. Each side checks the other's key itself
/// against the key it paired with, so no certificate authority is involved and nothing expires. TLS 1.3 only.
public struct TLSIdentity: Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    let certificate: NIOSSLCertificate
    let privateKey: NIOSSLPrivateKey

    public init(key: Curve25519.Signing.PrivateKey, name: String) throws(Failure) {
        do {
            let issuerKey = Certificate.PrivateKey(key)
            let subject = try DistinguishedName { CommonName(name.isEmpty ? "lyre" : name) }
            let now = Date()
            let certificate = try Certificate(
                version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: issuerKey.publicKey,
                notValidBefore: now.addingTimeInterval(-86400), notValidAfter: Date(timeIntervalSince1970: 253_402_300_799),
                issuer: subject, subject: subject, signatureAlgorithm: .ed25519, extensions: Certificate.Extensions(),
                issuerPrivateKey: issuerKey)
            self.certificate = try NIOSSLCertificate(bytes: Array(try certificate.serializeAsPEM().pemString.utf8), format: .pem)
            privateKey = try NIOSSLPrivateKey(bytes: Array(try issuerKey.serializeAsPEM().pemString.utf8), format: .pem)
        } catch {
            throw Failure(description: "cannot make a TLS certificate for the device key: \(error)")
        }
    }

    private func configuration(_ base: TLSConfiguration) -> TLSConfiguration {
        var configuration = base
        configuration.minimumTLSVersion = .tlsv13
        // Device keys are Ed25519, which BoringSSL offers only when asked.
        configuration.signingSignatureAlgorithms = [.ed25519]
        configuration.verifySignatureAlgorithms = [.ed25519]
        configuration.certificateChain = [.certificate(certificate)]
        configuration.privateKey = .privateKey(privateKey)
        // Both ends present a certificate; each end's own callback decides whether the key is the one it wants.
        configuration.certificateVerification = .noHostnameVerification
        // No certificate authority is consulted, so the system's store is not loaded (it cost tens of ms).
        configuration.trustRoots = .certificates([])
        return configuration
    }

    /// The receiver's context: it asks every TLS client for its certificate.
    public func serverContext() throws(Failure) -> NIOSSLContext {
        do { return try NIOSSLContext(configuration: configuration(.makeServerConfiguration(certificateChain: [], privateKey: .privateKey(privateKey)))) } catch {
            throw Failure(description: "cannot set up TLS: \(error)")
        }
    }

    /// The sender's context.
    public func clientContext() throws(Failure) -> NIOSSLContext {
        do { return try NIOSSLContext(configuration: configuration(.makeClientConfiguration())) } catch {
            throw Failure(description: "cannot set up TLS: \(error)")
        }
    }

    /// The raw Ed25519 public key a peer's certificate carries; nil when it carries another kind.
    public static func ed25519Key(of certificate: NIOSSLCertificate) -> [UInt8]? {
        guard let der = try? certificate.toDERBytes(), let parsed = try? Certificate(derEncoded: der),
            let key = Curve25519.Signing.PublicKey(parsed.publicKey)
        else { return nil }
        return Array(key.rawRepresentation)
    }
}

/// The receiver's first handler on a connection: a TLS handshake starts with a handshake record (0x16), plain
/// RTSP with a method's letter, so one port serves both. On TLS it puts NIOSSL in front of the RTSP framing,
/// accepting any client certificate: which keys may do what is the receiver's decision, per request
/// (`RTSPPeerKey`). Then it steps out of the way.
public final class TLSSniffer: ChannelInboundHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer

    private let context: NIOSSLContext

    public init(context: NIOSSLContext) { self.context = context }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        if buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) == 0x16 {
            let tls = NIOSSLServerHandler(context: self.context) { _, promise in promise.succeed(.certificateVerified) }
            do { try context.pipeline.syncOperations.addHandler(tls, position: .after(self)) } catch {
                context.fireErrorCaught(error)
                return
            }
        }
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}

/// What a connection proves about its peer.
public enum RTSPPeerKey {
    /// The Ed25519 key the peer proved it holds in the TLS handshake; nil on a plain connection.
    public static func of(_ channel: Channel) -> [UInt8]? {
        guard let tls = try? channel.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self),
            let certificate = tls.peerCertificate
        else { return nil }
        return TLSIdentity.ed25519Key(of: certificate)
    }
}
