// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "Lyre",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "LyreWire", targets: ["LyreWire"]),
        .library(name: "LyreIdentity", targets: ["LyreIdentity"]),
        .library(name: "LyreDiscovery", targets: ["LyreDiscovery"]),
        .library(name: "LyreSender", targets: ["LyreSender"]),
        .library(name: "LyreReceiver", targets: ["LyreReceiver"]),
        .executable(name: "lyre", targets: ["lyre"]),
        .executable(name: "lyred", targets: ["lyred"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.0.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.0"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.0"),
    ],
    targets: [
        // C modules: one per Debian library.
        .systemLibrary(
            name: "CAvahiClient", pkgConfig: "avahi-client",
            providers: [.apt(["libavahi-client-dev"])]),
        // avahi-core is loaded with dlopen, never linked: see Sources/CAvahiCore/include/CAvahiCore.h.
        // Headers: Debian libavahi-core-dev.
        .target(name: "CAvahiCore", linkerSettings: [.linkedLibrary("dl")]),
        .systemLibrary(
            name: "CALSA", pkgConfig: "alsa",
            providers: [.apt(["libasound2-dev"])]),
        // libasound's error messages kept for our errors instead of printed: see Sources/CALSAShim/include/CALSAShim.h.
        .target(name: "CALSAShim", dependencies: ["CALSA"]),

        .systemLibrary(name: "COpus", pkgConfig: "opus", providers: [.apt(["libopus-dev"])]),
        // Fixed-signature wrappers for the variadic opus_*_ctl: see Sources/COpusShim/include/COpusShim.h.
        .target(name: "COpusShim", dependencies: ["COpus"]),
        // FFmpeg's demux/decode loop, in C beside the macros it needs, with FFmpeg's libraries opened on first
        // use rather than linked, and libsndfile for WAV and raw PCM, likewise: see Sources/CFFmpegShim/include/CFFmpegShim.h.
        // Headers: Debian libavformat-dev, libavcodec-dev, libswresample-dev, libavutil-dev, libsndfile1-dev.
        .target(name: "CFFmpegShim", linkerSettings: [.linkedLibrary("dl")]),
        .systemLibrary(name: "CSoxr", pkgConfig: "soxr", providers: [.apt(["libsoxr-dev"])]),
        // libpulse's asynchronous control API on its threaded main loop (lyre sink's control, lyred's PulseAudio output), and its simple API for recording, with
        // libpulse opened on first use rather than linked: see Sources/CPulseShim/include/CPulseShim.h.
        // Headers: Debian libpulse-dev.
        .target(name: "CPulseShim", linkerSettings: [.linkedLibrary("dl")]),
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        // libsrtp2, for the tests only: the peer LyreSRTP is checked against, packet by packet, both ways.
        .systemLibrary(name: "CSRTP", pkgConfig: "libsrtp2", providers: [.apt(["libsrtp2-dev"])]),
        // Kernel receive timestamps (SCM_TIMESTAMPNS and the CMSG macros): see Sources/CSocketShim/include/CSocketShim.h.
        .target(name: "CSocketShim"),

        // Wire: the wire types and pure codecs, and the few small helpers both ends share (RegularFile reads a small
        // file whole; the rest does no I/O).
        .target(name: "LyreWire"),

        // Clock: the host clock, and the sockets of the timing exchange with kernel receive timestamps.
        .target(name: "LyreClock", dependencies: ["CSocketShim", .product(name: "Crypto", package: "swift-crypto")]),

        // Media: ALSA and WAV output, decoding (FFmpeg's libraries); Opus. Resampling (libsoxr) is the sender's, in
        // LyreSender: lyred resamples nothing with it, and linking it would load libsoxr and its libgomp at every start.
        .target(name: "LyreAudio", dependencies: ["CALSA", "CALSAShim", "CFFmpegShim", "CPulseShim", "LyreWire", "LyreClock"]),
        .target(name: "LyreCodec", dependencies: ["COpus", "COpusShim"]),
        // SRTP with AEAD_AES_128_GCM (RFC 7714) on swift-crypto: paired sessions' audio, encrypted and
        // authenticated. See Sources/LyreSRTP/SRTPSession.swift for why not libsrtp2.
        .target(name: "LyreSRTP", dependencies: [
            "LyreWire", .product(name: "Crypto", package: "swift-crypto"), .product(name: "CryptoExtras", package: "swift-crypto"),
        ]),

        // A local control socket (lines in, lines out, this user only): lyred's, and lyre play's group socket.
        .target(
            name: "LyreControl",
            dependencies: ["LyreWire", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")]),

        // RTSP on NIO, the same at both ends: the framing and the peer handler that drives LyreWire's
        // RTSPPeerStateMachine (requests both ways, matched by CSeq).
        .target(
            name: "LyreRTSP",
            dependencies: [
                "LyreWire", "LyreClock", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"), .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),

        // Engines.
        .target(
            name: "LyreReceiver",
            dependencies: [
                "LyreWire", "LyreRTSP", "LyreAudio", "LyreCodec", "LyreClock", "LyreControl", "LyrePairing", "LyreSRTP",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // The web page and its API (Protocol/control-api.md): NIO's own HTTP/1 and WebSocket codecs.
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
            ],
            // The page: plain HTML, CSS and JavaScript, compiled into the binary (nothing read at run time).
            resources: [.embedInCode("Web/index.html")],
            // A file sees the members of what it imports, no more: a module that imports Foundation would otherwise
            // lend its String methods (`contains`) to every file here, and link Foundation's text half into lyred.
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]),
        .target(
            name: "LyreSender",
            dependencies: [
                "LyreWire", "LyreRTSP", "LyreAudio", "LyreCodec", "LyreClock", "LyreDiscovery", "LyreIdentity", "LyrePairing", "LyreSRTP",
                "CSoxr",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            // As LyreReceiver: no member comes into a file from a module it does not import (Foundation's text half).
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]),

        // lyre sink: one sound output per receiver on PulseAudio or PipeWire (libpulse), decided by SinkRouter and
        // carried out by SinkController.
        .target(
            name: "LyreSink",
            dependencies: [
                "CPulseShim", "LyreAudio", "LyreClock", "LyreDiscovery", "LyreSender", "LyreWire", "LyreMPRIS",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]),

        // MPRIS: the receiver's now-playing state and controls on D-Bus (libdbus-1).
        .target(name: "LyreMPRIS", dependencies: ["CDBus", "LyreClock"]),

        // A device's identity: its id and its long-term key (swift-crypto's Ed25519), kept in its state directory.
        // Below Discovery, which advertises them, and Pairing, which exchanges and pins them.
        .target(
            name: "LyreIdentity",
            dependencies: ["LyreWire", .product(name: "Crypto", package: "swift-crypto")]),

        // Discovery: advertise and browse over avahi-client or embedded avahi-core.
        .target(
            name: "LyreDiscovery",
            dependencies: [
                "LyreWire", "LyreIdentity", "CAvahiClient", "CAvahiCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),

        // Pairing (Protocol/pairing.md): CPace on libsodium's ristretto255, both ends' state machines, the
        // paired devices kept in the state directory.
        .target(
            name: "LyrePairing",
            dependencies: ["CSodium", "LyreWire", "LyreIdentity", .product(name: "Crypto", package: "swift-crypto")]),

        // The version both executables print: the release and git's commit, baked in before every build.
        .plugin(name: "LyreVersionPlugin", capability: .buildTool()),
        .target(name: "LyreVersion", plugins: ["LyreVersionPlugin"]),

        // What both executables share: one-line errors, logging set-up, option parsing for Lyre types, the
        // config file, the version.
        .target(
            name: "LyreCommandLine",
            dependencies: [
                "LyreDiscovery", "LyreWire", "LyreVersion",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]),

        // Executables: thin.
        .executableTarget(
            name: "lyre",
            dependencies: [
                "LyreClock", "LyreDiscovery", "LyreIdentity", "LyreWire", "LyreCommandLine", "LyreSender", "LyreSink", "LyreAudio", "LyreControl", "LyrePairing",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]),
        .executableTarget(
            name: "lyred",
            dependencies: [
                "LyreDiscovery", "LyreIdentity", "LyreWire", "LyreAudio", "LyreClock", "LyreCommandLine", "LyreControl", "LyreReceiver", "LyreMPRIS", "LyrePairing", "LyreRTSP",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]),

        // An app that embeds LyreSender: its music is streamed, its system sounds stay local.
        .executableTarget(name: "lyre-example-player", dependencies: ["LyreSender"], path: "Examples/ExamplePlayer"),

        .testTarget(name: "LyreWireTests", dependencies: ["LyreWire"]),
        .testTarget(name: "LyreIdentityTests", dependencies: ["LyreIdentity", "LyreWire"]),
        .testTarget(
            name: "LyreDiscoveryTests",
            dependencies: [
                "LyreDiscovery", "LyreWire", "CAvahiClient", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(name: "LyreIntegrationTests", dependencies: ["LyreWire"]),
        .testTarget(name: "LyreMPRISTests", dependencies: ["LyreMPRIS"]),
        .testTarget(name: "LyrePairingTests", dependencies: ["LyrePairing", "LyreWire", "LyreSRTP", "LyreClock", "CSRTP"]),
        .testTarget(
            name: "LyreRTSPTests",
            dependencies: ["LyreRTSP", "LyreWire", "LyreClock", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio")]),
        .testTarget(name: "LyreAudioTests", dependencies: ["LyreAudio"]),
        .testTarget(name: "LyreSinkTests", dependencies: ["LyreSink", "LyreMPRIS", "LyreWire"]),
        .testTarget(name: "LyreReceiverTests", dependencies: ["LyreReceiver", "LyreWire", "LyreAudio", "LyreSRTP", "LyreCodec"]),
        .testTarget(name: "LyreCodecTests", dependencies: ["LyreCodec"]),
        // The two ends' session rules against each other, in process.
        .testTarget(
            name: "LyreSessionTests",
            dependencies: ["LyreSender", "LyreReceiver", "LyreWire", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")]),
        .testTarget(
            name: "LyreSenderTests",
            dependencies: [
                "LyreSender", "LyreWire", "LyreSRTP", "LyreCodec", "LyreReceiver", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "LyreControlTests",
            dependencies: [
                "LyreControl", "LyreWire", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]),
        .testTarget(
            name: "LyreCommandLineTests",
            dependencies: ["LyreCommandLine", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        // lyred's own pure parts (what MPRIS shows and what its calls become), through `@testable import lyred`.
        .testTarget(name: "lyredTests", dependencies: ["lyred", "LyreMPRIS", "LyreReceiver", "LyreWire"]),
    ]
)
