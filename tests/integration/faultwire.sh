#!/bin/bash
# Self-check of gm-faultwire, the userspace faulty wire that stands in for
# tc netem (absent from this kernel).  Real EtherType-0x88B5 frames from
# gm-rawframe cross veth -> relay -> veth; the receiver verifies every byte,
# and a second receiver on the same interface records the order and arrival
# times of the sequence numbers.  Each fault must show at the receiver, and
# the relay's counters must agree with what arrived.
set -u
here=$(cd "$(dirname "$0")" && pwd)
BUILT=${GM_TESTS_BUILDDIR:-$(pwd)}
RAWFRAME=$BUILT/tools/gm-rawframe
ET=0x88B5

fail()
{
	echo "FAIL: $*"
	exit 1
}
ok() { echo "ok: $*"; }
skip()
{
	echo "SKIP: $*"
	exit 77
}

[ "$(id -u)" -eq 0 ] || skip "needs root (CAP_NET_ADMIN for veths, CAP_NET_RAW for AF_PACKET)"
command -v ip >/dev/null || skip "'ip' not installed (iproute2)"
command -v python3 >/dev/null || skip "python3 not found (the order/timing receiver uses it)"
[ -x "$RAWFRAME" ] || fail "$RAWFRAME not built (make check builds it)"
FW_BIN=$BUILT/../experiments/faults/gm-faultwire
[ -x "$FW_BIN" ] || fail "$FW_BIN not built (make check builds it)"
. "$here/faultwire-lib.sh"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/fwcheck.XXXXXX")
BGPIDS=
cleanup()
{
	[ -n "$BGPIDS" ] && kill $BGPIDS 2>/dev/null
	fw_down
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# Order and timing receiver: counts distinct sequence numbers of gm-rawframe
# frames (bytes 8..11 after the Ethernet header) without judging their
# content, and prints one line:
#   seq: got G late L first_ms F max_gap_ms M missing K from A to B
# late = frames that arrived after a higher sequence number; first_ms = first
# arrival after the socket was ready; max_gap_ms = longest silence between
# two arrivals (kernel receive timestamps); missing = sequence numbers 0..N-1 that never came.
# Like gm-rawframe recv -w, it gives up only TIMEOUT_MS after SIGTERM (the
# sender is done).
cat >"$WORK/seqrecv.py" <<'EOF'
import signal, socket, struct, sys, time
ifname, et, n, timeout_ms = sys.argv[1], int(sys.argv[2], 0), int(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # protocol 0 until bound: hears no other interface
s.setsockopt(socket.SOL_SOCKET, 33, 32 << 20)  # SO_RCVBUFFORCE
s.setsockopt(socket.SOL_SOCKET, 35, 1)  # SO_TIMESTAMPNS: kernel receive time
s.bind((ifname, et))
start = time.time()
print("seqrecv: ready", flush=True)
seen, late, hi, first, last, gap = set(), 0, -1, None, None, 0.0
sender_done = []
signal.signal(signal.SIGTERM, lambda *_: sender_done.append(time.monotonic()))
while len(seen) < n:
    # before SIGTERM: look for it every 0.1 s (a blocking receive would resume after it)
    left = sender_done[0] + timeout_ms / 1000 - time.monotonic() if sender_done else 0.1
    if sender_done and left <= 0:
        break
    s.settimeout(left)
    try:
        f, anc, _, _ = s.recvmsg(65536, 64)
    except socket.timeout:
        if sender_done:
            break
        continue
    # When the frame reached the interface, not when this script got to it.
    now = time.time()
    for lvl, typ, data in anc:
        if lvl == socket.SOL_SOCKET and typ == 35:
            sec, nsec = struct.unpack("qq", data[:16])
            now = sec + nsec * 1e-9
    if len(f) < 26:
        continue
    seq = struct.unpack("!I", f[22:26])[0]
    if seq >= n or seq in seen:
        continue
    seen.add(seq)
    if first is None:
        first = now
    if last is not None:
        gap = max(gap, now - last)
    last = now
    if seq < hi:
        late += 1
    hi = max(hi, seq)
miss = sorted(set(range(n)) - seen)
print("seq: got %d late %d first_ms %d max_gap_ms %d missing %d from %d to %d" % (
    len(seen), late, int(((first or start) - start) * 1000), int(gap * 1000), len(miss),
    miss[0] if miss else -1, miss[-1] if miss else -1))
EOF

# bg NAME CMD...: run CMD in the background, output in $WORK/NAME, and wait
# until it says it is ready. sender_done NAME...: SIGTERM to them (through
# timeout), then wait for them.
bg()
{
	local name=$1 i
	shift
	# Not truncated by the child: it may start after the first grep.
	: >"$WORK/$name"
	"$@" >>"$WORK/$name" 2>&1 &
	BGPIDS="$BGPIDS $!"
	eval "pid_$name=$!"
	for i in $(seq 100); do
		grep -q ready "$WORK/$name" && return 0
		sleep 0.1
	done
	fail "$name did not start: $(cat "$WORK/$name")"
}
sender_done()
{
	local name pid
	for name in "$@"; do
		eval "pid=\$pid_$name"
		kill -TERM "$pid" 2>/dev/null
		wait "$pid"
	done
	BGPIDS=
}

# cross N SIZE TIMEOUT_MS [EXPECT] [send options]: gm-rawframe sends N
# frames from $FW_A to $FW_B while gm-rawframe and seqrecv listen on $FW_B
# (the verifier waits for EXPECT frames, default N, or TIMEOUT_MS after the
# sender is done), then the wire goes down.  Sets RF (verifier line), SEQ
# (seqrecv line).
cross()
{
	local n=$1 size=$2 t=$3 expect=${4:-$1} mac src
	shift 4 2>/dev/null || shift $#
	mac=$(cat "/sys/class/net/$FW_B/address")
	src=$(cat "/sys/class/net/$FW_A/address")
	bg seq timeout 120 python3 "$WORK/seqrecv.py" "$FW_B" $ET "$n" "$t"
	bg rf timeout 120 "$RAWFRAME" recv -w -F "$src" "$FW_B" $ET "$expect" "$t"
	timeout 60 "$RAWFRAME" send -s "$size" "$@" "$FW_A" "$mac" $ET "$n" >"$WORK/send" 2>&1 ||
		fail "sender: $(cat "$WORK/send")"
	sender_done rf seq
	RF=$(grep '^gm-rawframe: received' "$WORK/rf")
	SEQ=$(grep '^seq:' "$WORK/seq")
	[ -n "$RF" ] && [ -n "$SEQ" ] || fail "receivers: $(cat "$WORK/rf" "$WORK/seq")"
	fw_down
}

# field LINE WORD: the number after WORD in LINE.
field() { awk -v w="$2" '{for (i = 1; i < NF; i++) if ($i == w) {print $(i + 1); exit}}' <<<"$1"; }
c12() { fw_counter 1to2 "$1"; }

# 1. A clean wire delivers everything, both ways, at full MTU and at 9000.
fw_up fc || fail "fw_up"
cross 2000 1486 5000
[ "$RF" = "gm-rawframe: received 2000 valid of 2000 (0 invalid, 0 duplicate)" ] || fail "clean: $RF"
[ "$(c12 received)" = 2000 ] && [ "$(c12 forwarded)" = 2000 ] && [ "$(field "$SEQ" late)" = 0 ] ||
	fail "clean: relay $FW_COUNTERS / $SEQ"
ok "clean wire: 2000 full-size frames arrive intact, in order"
fw_up fc || fail "fw_up"
mac=$(cat "/sys/class/net/$FW_A/address")
bg rf timeout 120 "$RAWFRAME" recv -w -F "$(cat "/sys/class/net/$FW_B/address")" "$FW_A" $ET 500 5000
timeout 60 "$RAWFRAME" send -s 1000 "$FW_B" "$mac" $ET 500 >"$WORK/send" 2>&1 || fail "sender"
sender_done rf
r=$(grep '^gm-rawframe: received' "$WORK/rf")
[ "$r" = "gm-rawframe: received 500 valid of 500 (0 invalid, 0 duplicate)" ] || fail "B to A: $r"
fw_down
ok "clean wire, other direction: 500 of 500"
fw_up fm --mtu 9000 || fail "fw_up --mtu 9000"
cross 300 8986 5000
[ "$RF" = "gm-rawframe: received 300 valid of 300 (0 invalid, 0 duplicate)" ] || fail "mtu 9000: $RF"
ok "MTU 9000: 300 jumbo frames of 9000 bytes arrive intact"

# 2. Faults touch only the chosen EtherType.
fw_up fe --loss 100 --corrupt 100 --ethertype 0x88B6 || fail "fw_up"
cross 300 500 5000
[ "$RF" = "gm-rawframe: received 300 valid of 300 (0 invalid, 0 duplicate)" ] &&
	[ "$(c12 untouched)" = 300 ] && [ "$(c12 lost)" = 0 ] ||
	fail "other EtherType: $RF / $FW_COUNTERS"
ok "--ethertype 0x88B6: 0x88B5 frames pass untouched (300 of 300)"
fw_up fe --loss 100 --direction 2to1 || fail "fw_up"
cross 300 500 5000
[ "$RF" = "gm-rawframe: received 300 valid of 300 (0 invalid, 0 duplicate)" ] &&
	[ "$(c12 untouched)" = 300 ] || fail "--direction 2to1: $RF / $FW_COUNTERS"
ok "--direction 2to1: frames from A to B pass untouched (300 of 300)"

# 3. Loss: 2000 frames at 50% -> mean 1000, sd 22; and exactly what the relay
# forwarded arrives.
fw_up fl --loss 50 --seed 7 || fail "fw_up"
cross 2000 200 3000
got=$(field "$RF" received)
[ "$got" -ge 850 ] && [ "$got" -le 1150 ] || fail "loss 50: $RF"
grep -q '(0 invalid, 0 duplicate)' <<<"$RF" || fail "loss 50: damaged frames: $RF"
[ "$got" = "$(c12 forwarded)" ] && [ $(($(c12 lost) + $(c12 forwarded))) = 2000 ] ||
	fail "loss 50: receiver $got, relay $FW_COUNTERS"
ok "--loss 50: $got of 2000 arrived, relay lost $(c12 lost)"

# 4. Corruption: every frame arrives, none passes verification.
fw_up fr --corrupt 100 || fail "fw_up"
cross 500 300 3000
[ "$RF" = "gm-rawframe: received 0 valid of 500 (500 invalid, 0 duplicate)" ] &&
	[ "$(c12 corrupted)" = 500 ] || fail "corrupt 100: $RF / $FW_COUNTERS"
ok "--corrupt 100: 500 frames arrived, all 500 fail verification"

# 5. Duplication: the verifier waits for one frame more than is sent, so it
# also counts the last duplicate.
fw_up fd --duplicate 100 || fail "fw_up"
cross 500 300 3000 501
[ "$RF" = "gm-rawframe: received 500 valid of 501 (0 invalid, 500 duplicate)" ] &&
	[ "$(c12 forwarded)" = 1000 ] || fail "duplicate 100: $RF / $FW_COUNTERS"
ok "--duplicate 100: 500 frames sent, 1000 arrived intact (500 duplicates)"

# 6. Reordering: every frame arrives intact; exactly the frames the relay
# held back arrive after a later one.  A hold lasts 1-3 frames and no second
# frame is held meanwhile, so about 1000 * 0.25 / 1.5 = 167 are reordered.
fw_up fo --reorder 25 --seed 3 || fail "fw_up"
cross 1000 200 5000
[ "$RF" = "gm-rawframe: received 1000 valid of 1000 (0 invalid, 0 duplicate)" ] ||
	fail "reorder: $RF"
late=$(field "$SEQ" late)
[ "$late" = "$(c12 reordered)" ] && [ "$late" -ge 80 ] && [ "$late" -le 300 ] ||
	fail "reorder: $SEQ / $FW_COUNTERS"
ok "--reorder 25: 1000 of 1000 intact, $late arrived after a later frame"

# 7. Delay with jitter: nothing can arrive before delay - jitter (a lower
# bound: a slow machine only adds), and jitter reorders.
fw_up fj --delay 100000 --jitter 20000 || fail "fw_up"
cross 1000 200 5000
[ "$RF" = "gm-rawframe: received 1000 valid of 1000 (0 invalid, 0 duplicate)" ] ||
	fail "delay: $RF"
first=$(field "$SEQ" first_ms)
[ "$first" -ge 79 ] && [ "$(c12 delayed)" = 1000 ] && [ "$(field "$SEQ" late)" -gt 0 ] ||
	fail "delay: $SEQ / $FW_COUNTERS"
ok "--delay 100ms --jitter 20ms: all 1000 intact, first after $first ms, $(field "$SEQ" late) reordered"

# 8. Link down: 1 frame per ms; 300 ms after the first, the link drops
# everything for 700 ms.  One contiguous run of frames is missing, and the
# receiver hears nothing for at least the window.
fw_up fw --down-after 300 --down-for 700 || fail "fw_up"
cross 1200 200 3000 1200 -i 1000
set -- "$(field "$SEQ" missing)" "$(field "$SEQ" from)" "$(field "$SEQ" to)"
gap=$(field "$SEQ" max_gap_ms)
[ "$1" -gt 0 ] && [ "$1" = "$(c12 down)" ] && [ $(($3 - $2 + 1)) = "$1" ] && [ "$2" -gt 0 ] &&
	[ "$3" -lt 1199 ] && [ "$gap" -ge 690 ] || fail "down: $SEQ / $FW_COUNTERS"
grep -q "(0 invalid, 0 duplicate)" <<<"$RF" || fail "down: $RF"
ok "--down-after 300 --down-for 700: frames $2..$3 lost ($1), silence of $gap ms, the rest intact"
echo "all faultwire checks passed"
