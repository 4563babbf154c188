import Foundation
import Testing

/// Lyre's Debian packages on a clean Debian: Tools/test builds them (Tools/package) and installs them with
/// apt-get into a fresh minbase root (Tools/debroot), outside the test network since apt needs the archive;
/// these tests check that root from inside it. The root is LYRE_DEBROOT.
@Suite(.serialized)
struct PackageTests {
    static func root() throws -> String {
        guard let root = ProcessInfo.processInfo.environment["LYRE_DEBROOT"],
              FileManager.default.fileExists(atPath: root + "/var/tmp/lyre-install-seconds") else {
            throw TestNetworkError(
                "no Debian root with Lyre's packages installed (LYRE_DEBROOT): run the suite through Tools/test, which makes it with Tools/package and Tools/debroot")
        }
        return root
    }

    /// Runs `script` in the test network with the root's /proc mounted (a real system has one; Swift reads
    /// its arguments there), then unmounts it.
    static func inRoot(_ network: TestNetwork, _ root: String, _ script: String, timeout: Double = 60) async throws -> Spawned {
        try await network.shell("""
            mount -t proc proc '\(root)/proc' || exit 90
            trap "umount -l '\(root)/proc'" EXIT
            \(script)
            """, timeout: timeout)
    }

    /// Replaces `path`'s text in place, so that the file keeps the owner and mode the package gave it.
    static func rewrite(_ path: String, _ text: String) throws {
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data(text.utf8))
        try handle.close()
    }

    /// A oneshot unit that runs `command` once the system is up, its output on the console; returns the link
    /// that enables it, to remove when done.
    static func enableOneshot(_ root: String, name: String, after: String, command: String) throws -> String {
        try """
            [Unit]
            After=\(after)
            [Service]
            Type=oneshot
            ExecStart=\(command)
            StandardOutput=journal+console
            [Install]
            WantedBy=multi-user.target
            """.write(toFile: root + "/etc/systemd/system/\(name)", atomically: true, encoding: .utf8)
        let wants = root + "/etc/systemd/system/multi-user.target.wants/\(name)"
        try? FileManager.default.removeItem(atPath: wants)
        try FileManager.default.createSymbolicLink(atPath: wants, withDestinationPath: "/etc/systemd/system/\(name)")
        return wants
    }

    /// Boots the root (systemd in a container, with a network of its own that has only loopback) until it
    /// powers itself off. cgroup v1 on this kernel's hosts: the container's systemd is given the hybrid hierarchy.
    static func boot(_ network: TestNetwork, _ root: String, timeout: Double) async throws -> Spawned {
        try await network.shell("""
            command -v systemd-nspawn >/dev/null || { echo "systemd-nspawn is missing (Debian systemd-container; Tools/test installs it)" >&2; exit 69; }
            SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=0 exec systemd-nspawn -q --register=no --keep-unit --private-network -D '\(root)' -b
            """, timeout: timeout)
    }

    static func toolsVersion() throws -> String {
        let script = Process()
        script.executableURL = URL(fileURLWithPath: TestNetwork.tools + "/version")
        let out = Pipe()
        script.standardOutput = out
        try script.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        script.waitUntilExit()
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// apt-get installed both packages, their libraries resolved from Debian alone: no Swift runtime file is
    /// in the root, every library each binary needs is found, and each prints the version built.
    @Test func thePackagesInstallOnCleanDebianWithoutSwift() async throws {
        let root = try Self.root()
        let swiftFiles = try FileManager.default.subpathsOfDirectory(atPath: root).filter { path in
            guard !path.hasPrefix("proc/") else { return false }
            let name = (path as NSString).lastPathComponent
            return name.hasPrefix("libswift") || name.hasPrefix("libFoundation") || name.hasPrefix("lib_Foundation")
                || name.hasPrefix("libdispatch") || name.hasPrefix("libBlocksRuntime") || name.hasPrefix("libXCTest")
                || path.contains("/swift/") || path.hasSuffix("/swift")
        }
        #expect(swiftFiles.isEmpty, "Swift runtime files in the root: \(swiftFiles.prefix(10))")

        let network = try TestNetwork(avahi: false)
        defer { network.close() }
        let version = try Self.toolsVersion()
        let checked = try await Self.inRoot(network, root, """
            for tool in lyred lyre; do
              chroot '\(root)' /usr/bin/$tool --version | sed "s/^/$tool version /"
              chroot '\(root)' ldd /usr/bin/$tool | grep 'not found' | sed "s/^/$tool missing /"
              echo "$tool ICU $(grep -a -c icudt '\(root)'/usr/bin/$tool || true)"
            done
            chroot '\(root)' ldd /usr/bin/lyred | grep -E 'libsoxr|libgomp' | sed "s/^/lyred needs the sender's /"
            # What lyre opens with dlopen, which ldd cannot see, is installed too: its Depends names it.
            for lib in libpulse.so.0 libpulse-simple.so.0 libsndfile.so.1 libavformat.so libavcodec.so libswresample.so libavutil.so; do
              ls '\(root)'/usr/lib/*/$lib* > /dev/null 2>&1 || echo "lyre opens $lib, not installed"
            done
            chroot '\(root)' ldd /usr/bin/lyre | grep -E 'libpulse' | sed "s/^/lyre links /"
            for tool in lyred lyre; do chroot '\(root)' ldd /usr/bin/$tool | grep -E 'libsrtp2|libnss3' | sed "s/^/$tool links /"; done
            icu="$(dirname "$(readlink -f "$(command -v swift)")")/../lib/swift_static/linux/lib_FoundationICU.a"
            [ -f "$icu" ] && echo "toolchain ICU $(grep -a -c icudt "$icu")" || echo "toolchain ICU: no $icu"
            """)
        #expect(checked.status == 0, "\(checked.stderr)")
        #expect(checked.lines.filter { $0.contains(" missing ") }.isEmpty, "\(checked.stdout)")
        // The receiver maps no resampler: libsoxr (and its OpenMP runtime) is the sender's, for its input.
        #expect(checked.lines.filter { $0.contains("needs the sender's") }.isEmpty, "\(checked.stdout)")
        // lyre opens libpulse when lyre sink needs it (Sources/CPulseShim), so it is not linked, and Depends
        // names it as it names FFmpeg's libraries and libsndfile, which lyre opens likewise. Neither program links
        // libsrtp2 and the NSS it brings: SRTP is LyreSRTP's, on swift-crypto (Sources/LyreSRTP/SRTPSession.swift).
        #expect(checked.lines.filter { $0.contains(", not installed") || $0.contains(" links ") }.isEmpty, "\(checked.stdout)")
        // Neither program calls anything in Foundation's text half, and no module they link imports Foundation,
        // so the link takes none of CoreFoundation and ICU (issue 30): ICU's data, named icudt, is not in either
        // binary. The toolchain's own ICU library, which a link would take it from, shows that the probe finds it.
        #expect(checked.lines.contains("lyred ICU 0"), "lyred links ICU: \(checked.stdout)")
        #expect(checked.lines.contains("lyre ICU 0"), "lyre links ICU: \(checked.stdout)")
        #expect(checked.lines.contains { $0.hasPrefix("toolchain ICU ") && (Int($0.dropFirst("toolchain ICU ".count)) ?? 0) > 0 },
                "\(checked.stdout)")
        #expect(checked.lines.filter { $0.contains(" version ") } == ["lyred version \(version)", "lyre version \(version)"], "\(checked.stdout)")

        let seconds = try String(contentsOfFile: root + "/var/tmp/lyre-install-seconds", encoding: .utf8)
        print("install of both packages, Depends: resolved from the archive: \(seconds.trimmingCharacters(in: .whitespacesAndNewlines)) s")
    }

    /// Each package holds what it promises, generated from the binaries' own option definitions: the man
    /// pages, bash/zsh/fish completions, the units and the config file.
    @Test func thePackagesHoldManPagesCompletionsUnitsAndTheConfigFile() async throws {
        let root = try Self.root()
        let files = [
            "usr/share/man/man1/lyred.1.gz", "usr/share/man/man1/lyre.1.gz",
            "usr/share/bash-completion/completions/lyred", "usr/share/bash-completion/completions/lyre",
            "usr/share/zsh/vendor-completions/_lyred", "usr/share/zsh/vendor-completions/_lyre",
            "usr/share/fish/vendor_completions.d/lyred.fish", "usr/share/fish/vendor_completions.d/lyre.fish",
            "lib/systemd/system/lyred.service", "lib/systemd/system/lyred@.service", "usr/lib/systemd/user/lyred.service",
            "usr/lib/systemd/user/lyre-sink.service", "etc/lyre/lyred.conf", "usr/share/dbus-1/system.d/lyred.conf",
        ]
        for file in files { #expect(FileManager.default.fileExists(atPath: "\(root)/\(file)"), "\(file) is not installed") }
        let network = try TestNetwork(avahi: false)
        defer { network.close() }
        // The man page documents every option (a missing one would mean it was not generated from the
        // binary); the completions complete subcommands.
        let man = try await network.shell("gzip -dc '\(root)/usr/share/man/man1/lyre.1.gz'; gzip -dc '\(root)/usr/share/man/man1/lyred.1.gz'")
        for option in ["--output-delay", "--check-config", "--access", "--to", "--latency", "--bitrate"] {
            #expect(man.stdout.contains("Fl -\(option.dropFirst(2))"), "man pages lack \(option)")
        }
        let bash = try String(contentsOfFile: root + "/usr/share/bash-completion/completions/lyre", encoding: .utf8)
        for subcommand in ["devices", "play", "sink", "group", "remote", "pair"] { #expect(bash.contains(subcommand)) }
        // The config file lists every option with its default, commented out; each, uncommented, is valid.
        let config = try String(contentsOfFile: root + "/etc/lyre/lyred.conf", encoding: .utf8)
        let keys = config.split(separator: "\n").filter { $0.hasPrefix("#") && $0.contains(" = ") && !$0.hasPrefix("# ") }
        for key in ["name", "port", "access", "output", "latency", "output-delay", "mdns", "interface", "log-level"] {
            #expect(config.contains("\n#\(key) ="), "lyred.conf lacks \(key)")
        }
        let defaults = keys.map { String($0.dropFirst()) }.joined(separator: "\n")
        try defaults.write(toFile: root + "/var/tmp/defaults.conf", atomically: true, encoding: .utf8)
        let check = try await Self.inRoot(network, root, "chroot '\(root)' lyred --config /var/tmp/defaults.conf --check-config")
        #expect(check.status == 0, "the shipped defaults, uncommented: \(check.stderr) \(defaults)")
    }

    /// Every unit passes `systemd-analyze verify` against the root's systemd, and the system units' sandbox
    /// rates at most 2.0 in `systemd-analyze security` (shairport-sync's and Snapcast's own units set only User=).
    @Test func theUnitsVerifyAndTheSystemUnitsRateAtMostTwo() async throws {
        let root = try Self.root()
        let network = try TestNetwork(avahi: false)
        defer { network.close() }
        let result = try await Self.inRoot(network, root, """
            cp '\(root)/lib/systemd/system/lyred@.service' '\(root)/etc/systemd/system/lyred@card1.service'
            for unit in lyred.service lyred@.service lyred@card1.service; do
              chroot '\(root)' systemd-analyze verify --man=no $unit >/dev/null 2>&1 && echo "verified $unit" || chroot '\(root)' systemd-analyze verify --man=no $unit
            done
            for unit in lyred.service lyre-sink.service; do
              chroot '\(root)' env XDG_RUNTIME_DIR=/tmp systemd-analyze verify --user --man=no /usr/lib/systemd/user/$unit && echo "verified user $unit"
            done
            for unit in lyred.service lyred@card1.service; do
              chroot '\(root)' systemd-analyze security --offline=true $unit | sed -n 's/.*Overall exposure level for \\([^:]*\\): \\([0-9.]*\\).*/rated \\1 \\2/p'
            done
            rm '\(root)/etc/systemd/system/lyred@card1.service'
            """)
        #expect(result.status == 0, "\(result.stderr)")
        for unit in ["lyred.service", "lyred@.service", "lyred@card1.service", "user lyred.service", "user lyre-sink.service"] {
            #expect(result.lines.contains("verified \(unit)"), "\(unit): \(result.stdout) \(result.stderr)")
        }
        for unit in ["lyred.service", "lyred@card1.service"] {
            let line = try #require(result.lines.first { $0.hasPrefix("rated \(unit) ") }, "\(result.stdout) \(result.stderr)")
            let score = try #require(Double(line.split(separator: " ").last ?? ""))
            print("systemd-analyze security: \(unit) \(score)")
            #expect(score <= 2.0, "\(unit) rates \(score)")
        }
    }

    /// The installed system boots (systemd in a container, systemd-nspawn, with a network of its own that has
    /// only loopback): lyred.service starts under its sandbox as its own user, reads /etc/lyre/lyred.conf,
    /// advertises through the root's avahi-daemon, and the installed `lyre play` plays a file to it by name,
    /// checked from the WAV the receiver wrote, first sample to last; `systemctl reload` then re-reads its file.
    @Test func theInstalledSystemBootsLyredServiceAndPlaysAFileToIt() async throws {
        let root = try Self.root()
        let network = try TestNetwork(avahi: false)
        defer { network.close() }
        let input = try await StreamingTests.sweep(network, rate: 48000, seconds: 4, signal: "music")
        try? FileManager.default.removeItem(atPath: root + "/var/tmp/in.wav")
        try FileManager.default.copyItem(atPath: input, toPath: root + "/var/tmp/in.wav")
        // Written in place: the file keeps the owner and mode the package gave it (root, group lyred, g+w), so
        // that lyred can keep what its page changes.
        let config = root + "/etc/lyre/lyred.conf"
        let attributes = try FileManager.default.attributesOfItem(atPath: config)
        let lyredGroup = try String(contentsOfFile: root + "/etc/group", encoding: .utf8).split(separator: "\n")
            .first { $0.hasPrefix("lyred:") }.flatMap { Int($0.split(separator: ":")[2]) }
        #expect(attributes[.groupOwnerAccountID] as? Int == lyredGroup && (attributes[.posixPermissions] as? Int ?? 0) & 0o020 != 0,
                "the packaged lyred.conf is not writable by the lyred group: \(attributes)")
        try Self.rewrite(config, """
            # written by PackageTests
            name = Installed Den
            access = open
            output = wav:/var/lib/lyred/out.wav

            """)
        // A second receiver on the same host, as for a second sound card: lyred@porch.service with its own file.
        try """
            name = Installed Porch
            port = 7701
            access = open
            output = wav:/var/lib/lyred/porch/out.wav

            """.write(toFile: root + "/etc/lyre/lyred-porch.conf", atomically: true, encoding: .utf8)
        let instance = root + "/etc/systemd/system/multi-user.target.wants/lyred@porch.service"
        try? FileManager.default.removeItem(atPath: instance)
        try FileManager.default.createSymbolicLink(atPath: instance, withDestinationPath: "/lib/systemd/system/lyred@.service")
        defer { try? FileManager.default.removeItem(atPath: instance) }
        // The player: after both receivers, plays to both rooms at once with the installed lyre, stops them
        // (which ends the WAVs), keeps their journals and powers the container off.
        let wants = try Self.enableOneshot(root, name: "lyre-test-play.service", after: "lyred.service lyred@porch.service avahi-daemon.service",
                                           command: #"/bin/sh -c 'lyre play /var/tmp/in.wav --to "Installed Den" --to "Installed Porch" --timeout 20; echo "lyre play exited $?"; runuser -u lyred -- lyre remote output-delay 25 --socket /run/lyred/control; echo "output-delay exited $?"; systemctl reload lyred.service; sleep 1; systemctl is-active lyred.service | sed "s/^/lyred.service /"; systemctl stop lyred.service lyred@porch.service; journalctl -b --no-pager -u lyred.service > /var/tmp/lyred.log; journalctl -b --no-pager -u lyred@porch.service > /var/tmp/lyred-porch.log; systemctl poweroff'"#)
        defer { try? FileManager.default.removeItem(atPath: wants) }
        try? FileManager.default.removeItem(atPath: root + "/var/lib/lyred/out.wav")
        try? FileManager.default.removeItem(atPath: root + "/var/lib/lyred/porch/out.wav")

        let boot = try await Self.boot(network, root, timeout: 120)
        let console = boot.stdout
        #expect(boot.status == 0, "systemd-nspawn: \(boot.stderr)\n\(console.suffix(3000))")
        #expect(console.contains("lyre play exited 0"), "\(console.suffix(3000))")
        #expect(console.contains("lyred.service active"), "\(console.suffix(3000))")
        // lyred.service, and the instance beside it with its own file, state and socket: each advertised
        // through the root's avahi-daemon and played the file whole.
        var journals: [String: String] = [:]
        // Music, held to what ffmpeg's libopus makes of it (StreamingTests.libopusFloors).
        let floors = try await StreamingTests.libopusFloors(network, input: input)
        for (log, name, socket, output) in [("lyred", "Installed Den", "/run/lyred/control", "/var/lib/lyred/out.wav"),
                                            ("lyred-porch", "Installed Porch", "/run/lyred-porch/control", "/var/lib/lyred/porch/out.wav")] {
            let journal = (try? String(contentsOfFile: root + "/var/tmp/\(log).log", encoding: .utf8)) ?? ""
            journals[log] = journal
            #expect(journal.contains("advertised as '\(name)'"), "\(journal)")
            #expect(journal.contains("via avahi"), "lyred should use the root's avahi-daemon: \(journal)")
            #expect(journal.contains("control socket \(socket)"), "\(journal)")
            #expect(FileManager.default.fileExists(atPath: root + output), "no output: \(journal)")
            let comparison = try await StreamingTests.compare(network, reference: input, output: root + output)
            StreamingTests.expectSameAudio(comparison, floor: floors.whole)
            StreamingTests.expectWhole(comparison, floor: floors.edges)
        }
        // The output delay set through the control socket was kept in the file, in the service's sandbox.
        #expect(console.contains("output-delay exited 0"), "\(console.suffix(3000)) \(journals["lyred"] ?? "")")
        let kept = try String(contentsOfFile: config, encoding: .utf8)
        #expect(kept.hasPrefix("# written by PackageTests\n") && kept.hasSuffix("\noutput-delay = 25\n"), "\(kept)")
        // `systemctl reload` (the unit's ExecReload) re-read the file, and lyred stayed up.
        #expect(journals["lyred"]?.contains("reloaded /etc/lyre/lyred.conf") == true, "\(journals["lyred"] ?? "")")
    }

    /// The user unit (README: `systemctl --user enable --now lyred.service` on a desktop) plays through the
    /// session's sound server, which the system unit cannot reach. In the booted root, with Debian's PipeWire
    /// (pipewire-alsa makes it ALSA's default PCM), a null sink of PipeWire's as the speakers and a user who
    /// lingers: the user's lyred.service starts with the user's manager and is advertised; a song played to it
    /// goes through PipeWire (lyred's stream is one of its sink inputs) and comes out of the speakers' monitor.
    /// lyred opens PipeWire's PCM with a 60 ms buffer: at 20 ms, 128-frame quanta were dropped and repeated
    /// (`ALSAOutput.pipeWireBufferMicroseconds`). The song is not always whole there yet (see below).
    @Test func theUserUnitPlaysThroughTheSessionsSoundServer() async throws {
        let root = try Self.root()
        let network = try TestNetwork(avahi: false)
        defer { network.close() }
        guard FileManager.default.fileExists(atPath: root + "/usr/bin/pipewire") else {
            throw TestNetworkError("the Debian root has no PipeWire: Tools/debroot installs it after the packages; run the suite through Tools/test")
        }
        // 12 s of a music-like mix.
        let song = try await StreamingTests.sweep(network, rate: 48000, seconds: 12, signal: "music")
        try? FileManager.default.removeItem(atPath: root + "/var/tmp/song.wav")
        try FileManager.default.copyItem(atPath: song, toPath: root + "/var/tmp/song.wav")
        // 6 s of it, for the session at 20 ms.
        let short = try await StreamingTests.sweep(network, rate: 48000, seconds: 6, signal: "music")
        try? FileManager.default.removeItem(atPath: root + "/var/tmp/short.wav")
        try FileManager.default.copyItem(atPath: short, toPath: root + "/var/tmp/short.wav")
        try #"""
            #!/bin/sh
            # As root, once the system is up: the listener's lyred (its user unit) is found and played to.
            uid=$(id -u listener)
            as_listener() { runuser -u listener -- env XDG_RUNTIME_DIR=/run/user/$uid DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/$uid/bus "$@"; }
            for i in $(seq 60); do as_listener systemctl --user is-active -q lyred.service && break; sleep 0.5; done
            as_listener systemctl --user is-active lyred.service | sed "s/^/user lyred.service /"
            # The speakers: the container has no sound card, so the session's default sink is a null sink of
            # PipeWire's, at 100 %, whose monitor reads what lyred played.
            as_listener pactl load-module module-null-sink sink_name=speakers > /dev/null
            as_listener pactl set-default-sink speakers
            as_listener pactl set-sink-volume speakers 100%
            as_listener pactl info | grep "Server Name" | sed "s/^/sound server: /"
            # The monitor recorded from before the song to after it: the whole song, as PipeWire played it.
            as_listener sh -c 'echo $$ > /tmp/parec.pid; exec parec --device=speakers.monitor --latency-msec=50 --format=s16le --rate=48000 --channels=2' > /var/tmp/monitor.raw &
            record=$!
            sleep 1
            lyre play /var/tmp/song.wav --to "Listener Den" --timeout 20 > /var/tmp/user-play.out 2>&1 &
            play=$!
            sleep 2
            as_listener pactl list sink-inputs > /var/tmp/sink-inputs.txt 2>&1
            wait $play; echo "lyre play exited $?"
            sleep 3
            kill $(cat /tmp/parec.pid); wait $record
            sed "s/^/lyre play: /" /var/tmp/user-play.out
            # Again at the shortest latency, 20 ms, shorter than PipeWire's 60 ms buffer.
            as_listener sh -c 'echo $$ > /tmp/parec.pid; exec parec --device=speakers.monitor --latency-msec=50 --format=s16le --rate=48000 --channels=2' > /var/tmp/monitor-20.raw &
            record=$!
            sleep 1
            lyre play /var/tmp/short.wav --to "Listener Den" --latency 20 --timeout 20 > /var/tmp/user-play-20.out 2>&1
            echo "lyre play --latency 20 exited $?"
            sleep 3
            kill $(cat /tmp/parec.pid); wait $record
            sed "s/^/lyre play --latency 20: /" /var/tmp/user-play-20.out
            as_listener journalctl --user -b --no-pager -u lyred.service > /var/tmp/user-lyred.log 2>&1
            systemctl poweroff
            """#.write(toFile: root + "/var/tmp/user-unit.sh", atomically: true, encoding: .utf8)
        // The listener: a user who lingers (the user manager starts at boot), with the user unit enabled and a
        // file of its own; the user manager and its units stop within seconds at power-off.
        let listener = try await network.shell("""
            set -e
            chroot '\(root)' sh -c 'id listener >/dev/null 2>&1 || useradd -m listener'
            home='\(root)'/home/listener
            mkdir -p "$home/.config/lyre" "$home/.config/systemd/user/default.target.wants" '\(root)'/var/lib/systemd/linger
            printf 'name = Listener Den\\nport = 7702\\nweb-port = 7782\\naccess = open\\n' > "$home/.config/lyre/lyred.conf"
            ln -sf /usr/lib/systemd/user/lyred.service "$home/.config/systemd/user/default.target.wants/lyred.service"
            chroot '\(root)' chown -R listener:listener /home/listener
            touch '\(root)'/var/lib/systemd/linger/listener
            mkdir -p '\(root)'/etc/systemd/system/user@.service.d '\(root)'/etc/systemd/user.conf.d
            printf '[Service]\\nTimeoutStopSec=10\\n' > '\(root)'/etc/systemd/system/user@.service.d/lyre-test.conf
            printf '[Manager]\\nDefaultTimeoutStopSec=5\\n' > '\(root)'/etc/systemd/user.conf.d/lyre-test.conf
            """)
        #expect(listener.status == 0, "\(listener.stderr)")
        defer {
            // The root is shared with the other tests: the listener lingers no more.
            for path in ["/var/lib/systemd/linger/listener", "/etc/systemd/system/user@.service.d/lyre-test.conf",
                         "/etc/systemd/user.conf.d/lyre-test.conf"] {
                try? FileManager.default.removeItem(atPath: root + path)
            }
        }
        let wants = try Self.enableOneshot(root, name: "lyre-test-user-unit.service", after: "avahi-daemon.service user@.service",
                                           command: "/bin/sh /var/tmp/user-unit.sh")
        defer { try? FileManager.default.removeItem(atPath: wants) }
        for file in ["/var/tmp/monitor.raw", "/var/tmp/monitor-20.raw", "/var/tmp/sink-inputs.txt", "/var/tmp/user-lyred.log"] {
            try? FileManager.default.removeItem(atPath: root + file)
        }

        let boot = try await Self.boot(network, root, timeout: 150)
        let console = boot.stdout
        let journal = (try? String(contentsOfFile: root + "/var/tmp/user-lyred.log", encoding: .utf8)) ?? ""
        #expect(boot.status == 0, "systemd-nspawn: \(boot.stderr)\n\(console.suffix(3000))")
        #expect(console.contains("user lyred.service active"), "\(console.suffix(3000))\n\(journal)")
        #expect(console.contains("lyre play exited 0"), "\(console.suffix(3000))\n\(journal)")
        #expect(journal.contains("advertised as 'Listener Den'"), "\(journal)")
        #expect(journal.contains("output ALSA default open, latency 60.0 ms"), "\(journal)")
        // lyred's stream is PipeWire's: the sink input pipewire-alsa makes for it.
        let inputs = (try? String(contentsOfFile: root + "/var/tmp/sink-inputs.txt", encoding: .utf8)) ?? ""
        #expect(inputs.contains("application.name = \"PipeWire ALSA [lyred]\""), "PipeWire's sink inputs: \(inputs)")
        // The song came out of PipeWire's speakers whole (below), at ffmpeg's libopus SNR, at unity gain. Until
        // 2026-12-07 that was a known issue: at 60 ms whole in 8 runs of 10, a fresh clone's
        // run had 5 corrections and the lag moved by 1536 frames, a run beside another suite's 30 corrections (at
        // 20 ms: whole in 0 runs of 5). Since lyred steers a sound server's steps under 50 ms rather than jumping
        // (Playout.estimatedJumpFrames), whole in 16 runs of 16: five fresh clones' suites, 8 runs of this test
        // alone and 3 beside two busy loops, each at the reference's SNR, the lag unmoved in 15 and moved by one
        // sample in one.
        // Heard, with under 5 % of its 10 ms windows silent where the song is not (the runs that were not whole
        // had 2 to 36): the windows compared are the song's, so a silent monitor still matched its 12 s.
        let comparison = try await StreamingTests.compare(network, reference: song, output: root + "/var/tmp/monitor.raw", format: "raw:s16le:48000:2")
        #expect((comparison["matched_seconds"] as? Double ?? 0) > 11.5, "\(comparison)")
        #expect((comparison["gaps"] as? Int ?? .max) < 60, "\(comparison)")
        let floors = try await StreamingTests.opusFloors(network, input: song)
        let sessions = journal.split(separator: "\n").filter { $0.contains("stats: received=") }.map(String.init)
        print("theUserUnitPlaysThroughTheSessionsSoundServer: \(comparison) \(sessions.first ?? "no stats")")
        StreamingTests.expectSameAudio(comparison, floor: floors.whole)
        // Whole is nothing cut or repeated, not one lag to the sample: lyred follows PipeWire's estimate of its
        // latency (README), steering, not jumping. In a fresh clone's run (the 16th) the lag moved by one sample
        // near the start as lyred left tune and came back to it (tuned=2), with no jump, nothing concealed and
        // the song at the reference's SNR. So: no jump, both ends at the reference's SNR, and the lag moved by
        // no more than a rate at its 1000 ppm bound can move it in 12 s (576 samples; the jumps once moved 1536).
        StreamingTests.expectWhole(comparison, lags: false, floor: floors.edges)
        let corrections = sessions.first?.firstMatch(of: /corrections=(\d+)/).flatMap { Int($0.1) }
        #expect(corrections == 0, "jumps: \(String(describing: corrections)): \(journal)")
        let moved = abs((comparison["tail_lag_samples"] as? Double ?? .infinity) - (comparison["head_lag_samples"] as? Double ?? 0))
        #expect(moved <= 576, "the lag moved by \(moved) samples: \(comparison)")
        #expect(abs(20 * log10(comparison["gain"] as? Double ?? 0)) < 0.5, "\(comparison)")

        // At 20 ms the 60 ms buffer is filled only 15 ms ahead (OutputEngine.lead): filled whole, every block was
        // rendered before its frames came, and all of the song was concealed (576,480 frames of 576,480).
        // Heard as above; whole it is not expected to be, as at a 20 ms buffer (see ALSAOutput).
        #expect(console.contains("lyre play --latency 20 exited 0"), "\(console.suffix(3000))\n\(journal)")
        let short20 = try await StreamingTests.compare(network, reference: short, output: root + "/var/tmp/monitor-20.raw", format: "raw:s16le:48000:2")
        let stats20 = sessions.count == 2 ? sessions[1] : ""
        let concealed = stats20.firstMatch(of: /concealed=(\d+)/).flatMap { Int($0.1) }
        print("theUserUnitPlaysThroughTheSessionsSoundServer at 20 ms: \(short20) \(stats20)")
        #expect((short20["gaps"] as? Int ?? .max) < 30, "\(short20)\n\(stats20)")
        #expect(concealed.map { $0 < 6 * 48000 / 20 } == true, "lyred concealed \(String(describing: concealed)) frames of 288,000: \(journal)")
    }

    /// lyred.service killed mid-song (as a crash would end it) is started again by systemd (`Restart=on-failure`),
    /// with the id, key and paired senders it keeps in its state directory: the sender, paired with it in the
    /// booted system (the PIN read from lyred's journal), brings the room back by itself, paired and encrypted
    /// again, and plays the song on from where it stopped, to its end.
    @Test func lyredRestartedBySystemdMidSongComesBackPairedAndPlaysOn() async throws {
        let root = try Self.root()
        let network = try TestNetwork(avahi: false)
        defer { network.close() }
        let input = try await StreamingTests.sweep(network, rate: 48000, seconds: 10, signal: "music")
        try? FileManager.default.removeItem(atPath: root + "/var/tmp/song.wav")
        try FileManager.default.copyItem(atPath: input, toPath: root + "/var/tmp/song.wav")
        let config = root + "/etc/lyre/lyred.conf"
        try Self.rewrite(config, """
            # written by PackageTests
            name = Installed Den
            access = paired
            output = wav:/var/lib/lyred/out.wav

            """)
        // The sender: pairs (the PIN from lyred's journal, read through a FIFO as it is written), plays the
        // song, and two seconds into it has systemd kill lyred with SIGKILL; then keeps what happened and
        // forgets the pairing at both ends (the root is shared with the other tests).
        try #"""
            #!/bin/sh
            export HOME=/root
            mkfifo /run/journal /run/pin
            journalctl -f -n 0 -o cat -u lyred.service > /run/journal &
            journal=$!
            exec 4< /run/journal
            lyre pair "Installed Den" --name Container --timeout 20 < /run/pin > /var/tmp/pair.out 2>&1 &
            pair=$!
            exec 3> /run/pin
            pin=$(timeout 30 grep -m1 -oE 'PIN [0-9]{6}' <&4 | cut -d" " -f2)
            echo "$pin" >&3
            exec 3>&-
            wait $pair; echo "lyre pair exited $?"
            lyre play /var/tmp/song.wav --to "Installed Den" --timeout 20 > /var/tmp/play.out 2>&1 &
            play=$!
            timeout 30 grep -m1 -q "now playing" <&4
            sleep 2
            systemctl kill -s KILL lyred.service && echo "lyred killed"
            wait $play; echo "lyre play exited $?"
            kill $journal
            echo "lyred.service restarts $(systemctl show -p NRestarts --value lyred.service)"
            systemctl is-active lyred.service | sed "s/^/lyred.service /"
            echo "control socket directory $(stat -c '%a %U' /run/lyred)"
            sed "s/^/lyre play: /" /var/tmp/pair.out /var/tmp/play.out
            systemctl stop lyred.service
            journalctl -b --no-pager -u lyred.service > /var/tmp/lyred.log
            lyre pair --forget "Installed Den" > /dev/null
            rm -f /var/lib/lyred/paired-senders.json
            systemctl poweroff
            """#.write(toFile: root + "/var/tmp/restart.sh", atomically: true, encoding: .utf8)
        let wants = try Self.enableOneshot(root, name: "lyre-test-restart.service", after: "lyred.service avahi-daemon.service",
                                           command: "/bin/sh /var/tmp/restart.sh")
        defer { try? FileManager.default.removeItem(atPath: wants) }
        try? FileManager.default.removeItem(atPath: root + "/var/lib/lyred/out.wav")

        let boot = try await Self.boot(network, root, timeout: 150)
        let console = boot.stdout
        let journal = (try? String(contentsOfFile: root + "/var/tmp/lyred.log", encoding: .utf8)) ?? ""
        #expect(boot.status == 0, "systemd-nspawn: \(boot.stderr)\n\(console.suffix(3000))")
        #expect(console.contains("lyre pair exited 0") && console.contains("lyred killed"), "\(console.suffix(3000))")
        // systemd started it again, once, and it stayed up.
        #expect(console.contains("lyred.service restarts 1") && console.contains("lyred.service active"), "\(console.suffix(3000))")
        // Its control socket's directory is its own alone (now-playing.md §5).
        #expect(console.contains("control socket directory 700 lyred"), "\(console.suffix(3000))")
        // The sender paused while its only room was gone, and played on when it was back; both sessions paired.
        #expect(console.contains("lyre play exited 0"), "\(console.suffix(3000))\n\(journal)")
        #expect(console.contains("paused: 'Installed Den' is no longer available") && console.contains("'Installed Den' is back"),
                "\(console.suffix(3000))")
        let said = console.split(separator: "\n").filter { $0.contains("lyre play: ") }
        #expect(!said.isEmpty && !said.contains { $0.contains("unencrypted") || $0.contains("plain") }, "\(said)")
        #expect(journal.components(separatedBy: "TLS and SRTP").count - 1 == 2, "two paired sessions, before and after: \(journal)")
        // The restarted lyred's output (it writes its file anew) holds the song from where it stopped to its end,
        // whole: no gap, its last sample played.
        let comparison = try await StreamingTests.compare(network, reference: input, output: root + "/var/lib/lyred/out.wav", part: true)
        // Music, held to what ffmpeg's libopus makes of it; the first 20 ms are where the stream resumed.
        let floors = try await StreamingTests.libopusFloors(network, input: input)
        StreamingTests.expectSameAudio(comparison, floor: floors.whole)
        StreamingTests.expectWhole(comparison, floor: floors.edges)
        #expect((comparison["matched_seconds"] as? Double ?? 0) > 5, "\(comparison)")
    }
}
