# The demo's steps; Tools/demo runs them inside Tools/netns (mDNS confined to this namespace's loopback).
set -euo pipefail
PATH="$LYRE_BIN:$PATH"
bold=$'\e[1m'; plain=$'\e[0m'
[[ -t 1 ]] || { bold=""; plain=""; }
step() { printf '\n%s== %s%s\n' "$bold" "$1" "$plain"; }
pause() { sleep "${1:-1.5}"; }
wait_for() {  # wait_for FILE TEXT: until the receiver's log says TEXT (bounded)
  for _ in $(seq 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "demo: gave up waiting for '$2' in $1" >&2; cat "$1" >&2; return 1
}
# The RTSP port from lyred's start line ("lyred ID (key …, access open) on port N via …"), not the web page's.
rtsp_port() { sed -n 's/.*, access [a-z]*) on port \([0-9]*\) .*/\1/p' "$1" | head -1; }
mkdir -p /run/demo/home
# The sender's pairings and preferred output go to a home of the demo's own (on this namespace's /run, a tmpfs):
# a run leaves the user's own untouched, and the next run starts as fresh as the receivers it makes.
export HOME=/run/demo/home XDG_STATE_HOME=/run/demo/home/.local/state XDG_CONFIG_HOME=/run/demo/home/.config
# Audible on the default ALSA device when there is a sound card, else written to a WAV file.
# (Porch, the last receiver, writes a file of its own.)
wav=${LYRE_DEMO_WAV:-/tmp/lyre-demo.wav}
if grep -q '^ *[0-9]' /proc/asound/cards 2>/dev/null; then output=default porch_output=default; else output="wav:$wav" porch_output="wav:${wav%.wav}-porch.wav"; fi

step "A receiver starts: lyred --name 'Living Room'"
lyred --name "Living Room" --port 0 --state-dir /run/demo/living --output "$output" 2>/run/demo/living.log &
living=$!
wait_for /run/demo/living.log "advertised as"
sed 's/^/   /' /run/demo/living.log

step "The device picker: lyre devices"
lyre devices

step "Watching route changes (lyre devices --watch) while other receivers come and go"
lyre devices --watch &
watch=$!
pause
lyred --name "Kitchen" --port 0 --output-kind hdmi --state-dir /run/demo/kitchen 2>/run/demo/kitchen.log &
kitchen=$!
wait_for /run/demo/kitchen.log "advertised as"
pause
echo "   (a second receiver also wants the name 'Kitchen': it is renamed, and keeps its own id)"
lyred --name "Kitchen" --port 0 --state-dir /run/demo/kitchen2 2>/run/demo/kitchen2.log &
kitchen2=$!
wait_for /run/demo/kitchen2.log "advertised as"
pause
echo "   (stopping the first Kitchen with SIGTERM: it withdraws at once)"
kill -TERM "$kitchen"; wait "$kitchen" || true
pause
kill -TERM "$kitchen2"; wait "$kitchen2" || true
pause 1
kill "$watch" 2>/dev/null || true; wait "$watch" 2>/dev/null || true

step "What apps read: lyre devices --json"
lyre devices --json

step "avahi-browse, a peer nobody here wrote, sees the same receiver"
avahi-browse --resolve --terminate _lyre._tcp | sed 's/^/   /'

step "Pairing: only paired senders play (lyred --access paired, the default)"
echo "   an unpaired sender is refused:"
lyre play "$LYRE_SAMPLES/chime.flac" --to "Living Room" --name "Demo sender" 2>&1 | sed 's/^/   /' || true
echo "   lyre pair 'Living Room': the receiver shows a PIN, the sender's user types it (here, through a pipe)"
mkfifo /run/demo/pin
lyre pair "Living Room" --name "Demo sender" <>/run/demo/pin 2>/dev/null | sed 's/^/   /' &
pairing=$!
pin=""
for _ in $(seq 100); do
  pin=$(lyre remote pairing --json 2>/dev/null | sed -n 's/.*"pin":"\([0-9]*\)".*/\1/p') && [[ -n $pin ]] && break
  sleep 0.1
done
[[ -n $pin ]] || { echo "demo: the receiver showed no PIN" >&2; kill "$pairing" 2>/dev/null; exit 1; }
echo "   lyre remote pairing (at the receiver): $(lyre remote pairing)"
echo "$pin" > /run/demo/pin
wait "$pairing"
echo "   lyre remote paired:"; lyre remote paired | sed 's/^/   /'

step "Streaming: lyre play Tools/samples/chime.flac --to 'Living Room' (44.1 kHz FLAC, resampled, Opus as SRTP; control over TLS pinned to the paired keys)"
lyre play "$LYRE_SAMPLES/chime.flac" --to "Living Room" --name "Demo sender"
grep -E "session from|stats" /run/demo/living.log | sed 's/^.*\[LyreReceiver\] /   /'

step "Now playing and remote control: the receiver shows what plays, and its controls drive the sender"
lyre play "$LYRE_SAMPLES/chime.flac" "$LYRE_SAMPLES/chime.flac" --to "Living Room" --name "Demo sender" \
  --title "Chime" --artist "Lyre" --album "Samples" &
player=$!
for _ in $(seq 100); do [[ $(lyre remote now-playing 2>/dev/null) == "▶"* ]] && break; sleep 0.1; done
echo "   lyre remote now-playing:";   lyre remote now-playing | sed 's/^/   /'
echo "   playerctl -p lyred metadata (MPRIS, as desktop media keys see it):"
playerctl -p lyred metadata --format '{{title}} — {{artist}} ({{album}}), {{duration(position)}} / {{duration(mpris:length)}}' 2>&1 | sed 's/^/   /' || true
echo "   lyre remote next:";          lyre remote next && lyre remote now-playing | sed 's/^/   /'
echo "   lyre remote rate 2 (lyre play has it disabled, so the receiver refuses it):"
lyre remote rate 2 2>&1 | sed 's/^/   /' || true
wait "$player"
grep -E "now playing:|relaying" /run/demo/living.log | tail -4 | sed 's/^.*\[LyreReceiver\] /   /'

step "A receiver with --access open also plays a standard RTSP publisher: ffmpeg -f rtsp"
kill -TERM "$living"; wait "$living" || true
lyred --name "Porch" --access open --port 0 --state-dir /run/demo/porch --output "$porch_output" --control-socket off --mpris off 2>/run/demo/porch.log &
porch=$!
wait_for /run/demo/porch.log "advertised as"
port=$(rtsp_port /run/demo/porch.log)
ffmpeg -loglevel error -re -i "$LYRE_SAMPLES/chime.flac" -c:a libopus -f rtsp "rtsp://127.0.0.1:$port/"
grep -E "Lavf" /run/demo/porch.log | tail -2 | sed 's/^.*\[LyreReceiver\] /   /'

kill -TERM "$porch"; wait "$porch" || true

step "Two apps side by side: a music app, and a doorbell app whose category options say duckOthers"
if [[ $output == wav:* ]]; then den_output="wav:${wav%.wav}-den.wav"; else den_output=default; fi
lyred --name "Den" --access open --port 0 --state-dir /run/demo/den --output "$den_output" --control-socket off --mpris off --web off 2>/run/demo/den.log &
den=$!
wait_for /run/demo/den.log "advertised as"
port=$(rtsp_port /run/demo/den.log)
music=${LYRE_DEMO_MUSIC:-/run/demo/music.wav}
ffmpeg -loglevel error -y -f lavfi -i "aevalsrc=0.25*sin(2*PI*220*t)*(1+0.5*sin(2*PI*3*t))+0.12*sin(2*PI*331*t)+0.08*sin(2*PI*1250*t):d=7:s=48000" -ac 2 "$music"
echo "   the music app plays to Den:  lyre-example-player music.wav --host 127.0.0.1:$port --name 'Music app'"
LYRE_LOCAL_OUTPUT=null lyre-example-player "$music" --host "127.0.0.1:$port" --name "Music app" 2>&1 | sed 's/^/   /' &
app=$!
wait_for /run/demo/den.log "now playing:"
pause 2
echo "   the doorbell rings:  lyre-example-player chime.flac --host 127.0.0.1:$port --name 'Doorbell app' --options duckOthers"
LYRE_LOCAL_OUTPUT=null lyre-example-player "$LYRE_SAMPLES/chime.flac" --host "127.0.0.1:$port" --name "Doorbell app" --options duckOthers 2>&1 | sed 's/^/   /'
wait "$app"
echo "   the music dipped under the chime and came back, its app never taken over:"
grep -E "plays over" /run/demo/den.log | sed 's/^.*\[LyreReceiver\] /   /'
kill -TERM "$den"; wait "$den" || true
step "Done"
if [[ $output == wav:* ]]; then echo "No sound card here: what Living Room played is in ${output#wav:}, Porch's in ${porch_output#wav:}, and Den's in ${den_output#wav:}"; else echo "You heard it on the default ALSA device."; fi
