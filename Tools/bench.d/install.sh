#!/usr/bin/env bash
# Tools/bench install: Lyre as a user installs it. Run by Tools/bench, outside the test network (apt-get needs
# Debian's archive); what plays runs inside it.
#   - each package's .deb and installed size;
#   - apt-get install of both into a clean minbase root (Tools/debroot), median of --runs, with the packages
#     already in the download cache after the first run (the first run's figure, with downloads, printed too);
#   - the security rating of each unit (systemd-analyze security --offline=true);
#   - the installed (static, stripped) lyred playing: CPU, peak RSS and first sample, side by side with
#     snapclient, by Tools/bench.d/streaming.py run on the packaged binaries.
# Usage: Tools/bench install [--runs N] [streaming.py options]
set -euo pipefail
runs=3
if [[ ${1:-} == --runs ]]; then runs=$2; shift 2; fi
mapfile -t debs < <(Tools/package .build-package)
root=.build-package/bench-root
echo
echo "packages"
for deb in "${debs[@]}"; do
  printf '  %-50s %6.1f MB .deb, %6.1f MB installed\n' "$(basename "$deb")" \
    "$(echo "$(stat -c %s "$deb") / 1000000" | bc -l)" "$(echo "$(dpkg-deb -f "$deb" Installed-Size) / 1000" | bc -l)"
done
times=()
for ((i = 1; i <= runs; i++)); do
  Tools/debroot "$root" "${debs[@]}" >/dev/null 2>&1
  times+=("$(cat "$root/var/tmp/lyre-install-seconds")")
  echo "install run $i/$runs: ${times[-1]} s" >&2
done
median=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}')
echo "  apt-get install of both in a clean minbase root: median $median s of $runs (runs: ${times[*]} s; Depends: from the archive, cached after the first)"
echo
echo "units (systemd-analyze security --offline=true; lower is safer, shairport-sync's and snapclient's own units set only User=)"
stage=.build-package/stage
for unit in "$stage/lyred/lib/systemd/system/lyred.service" "$stage/lyred/lib/systemd/system/lyred@.service" \
            "$stage/lyred/usr/lib/systemd/user/lyred.service" "$stage/lyre/usr/lib/systemd/user/lyre-sink.service"; do
  name=${unit#"$stage/"}
  copy=$(mktemp -d)/$(basename "$unit" | sed 's/@\./@bench./')
  cp "$unit" "$copy"
  printf '  %-48s %s\n' "$name" "$(systemd-analyze security --offline=true "$copy" 2>/dev/null | sed -n 's/.*Overall exposure level for [^:]*: //p')"
  rm -rf "$(dirname "$copy")"
done
for peer in /lib/systemd/system/snapclient.service /lib/systemd/system/snapserver.service; do
  [[ -f $peer ]] && printf '  %-48s %s\n' "(Debian's) $(basename "$peer")" "$(systemd-analyze security --offline=true "$peer" 2>/dev/null | sed -n 's/.*Overall exposure level for [^:]*: //p')"
done
# The packaged binaries, as installed: static Swift runtime, stripped.
mkdir -p .build-package/bin
ln -sf "$PWD/$stage/lyred/usr/bin/lyred" .build-package/bin/lyred
ln -sf "$PWD/$stage/lyre/usr/bin/lyre" .build-package/bin/lyre
echo
echo "the installed binaries playing (Tools/bench.d/streaming.py with LYRE_BIN=.build-package/bin)"
exec Tools/netns -- env LYRE_BIN="$PWD/.build-package/bin" python3 Tools/bench.d/streaming.py --runs "$runs" "$@"
