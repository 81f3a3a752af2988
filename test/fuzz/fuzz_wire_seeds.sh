#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# fuzz_wire_seeds.sh DIR - writes fuzz_wire's seed inputs into DIR: short
# scripts in its op encoding (see fuzz_wire.c) that get peers through the
# handshake both ways, in every mode, and then move frames, acks, pauses,
# failovers and goodbyes; and the inputs of the bugs it found. run.sh
# passes DIR to the target next to its corpus.
#
set -euo pipefail

[ $# = 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
dir=$1
mkdir -p "$dir"

byte() {
    local b
    for b in "$@"; do
        printf "\\x$(printf %02x "$b")"
    done
}
zeros() { local i; for ((i = 0; i < $1; ++i)); do byte 0; done; }

# Modes: 1 cluster secret, 2 no failover, 4 the check at the end, 8 a port
# backlog smaller than a frame, 16 the agent stops with everything live.
# Peers 0-3; peers 0 and 1 have ids below the agent's, 2 and 3 above.
dial() {            # CONN PEER KP ADDR: a whole handshake, we dial
    byte $((15 | $1 << 4)) "$2" "$3" "$4"
}
answer() {          # CONN PEER: take a connection the agent dialled, answer
    byte $((15 | $1 << 4 | 1 << 6)) "$2" 0 0
}
hello() {           # CONN WHO KP FLAGS ADDR: a HELLO of our own making
    byte $((0 | $1 << 4)) "$2" "$3" "$4" "$5"
    zeros 16
    byte 0
}
hello_ack() {       # CONN WHO KP FLAGS: an answer of our own making
    byte $((1 | $1 << 4)) "$2" "$3" "$4" 0
    zeros 16
    byte 0
}
auth() { byte $((2 | $1 << 4)) "$2" 0; }          # CONN HOW (0 valid)
am() {              # CONN BURST LEN CHAN SEQ PORT: AMs to the client
    byte $((3 | $1 << 4)) $(($2 - 1)) "$3" "$4" "$5" "$6" 0
}
big_am() {          # CONN BURST: AMs of 64 KiB
    byte $((3 | $1 << 4)) $(($2 - 1 | 12 << 4)) 0 0 0 0 0
}
huge_am() {         # CONN BURST: AMs of 128 KiB, the largest
    byte $((3 | $1 << 4)) $(($2 - 1 | 13 << 4)) 0 0 0 0 0
}
flow() { byte $((4 | $1 << 4)) "$2" 0 0 0; }       # CONN 0 PAUSE / 1 RESUME
ack() { byte $((5 | $1 << 4)) "$2" 0 0 0 0 0; }    # CONN HOW (0 what we got)
bye() { byte $((6 | $1 << 4)) 0 0 0; }             # CONN
raw() { byte $((7 | $1 << 4)) ${#2}; printf %s "$2"; }  # CONN BYTES
close_conn() { byte $((8 | $1 << 4)) "$2"; }       # CONN 0 FIN 1 RST 2 close
deaf() { byte $((8 | $1 << 4)) 3; }   # CONN: stops (or starts again) reading
accept() { byte $((9 | $1 << 4)) "$2"; }           # CONN PEER
# STEPS | TIME << 3; TIME 2: 0.6 ms later, 5: 60 ms, 6: 250 ms, 7: 1.1 s
step() { byte 10 "$1"; }
settle() { step 0; }
later() { step $((2 << 3)); }                      # an ack is due
send() {            # PEER LEN BURST [CLASS]: the client sends to a peer
    byte 11 "$1" 0 "$2" $(($3 - 1 | ${4:-0} << 4)) 0
}
recv() { byte 12 0; }
ctl() { byte 13 "$1"; }    # 1 status; even: fault, bit 6 mute

for mode in 0 1 2 3 4 5 6 7; do
    # We dial and send, the client reads, the agent acks.
    { byte $mode; dial 0 0 0 0; am 0 4 40 0 0 0; settle; recv; later; settle
      am 0 2 100 0 0 1; later; settle; recv; } > "$dir/dial-am-$mode"
    # The client sends, the agent dials, we answer and ack.
    { byte $mode; send 2 40 3; settle; answer 0 2; answer 1 2; answer 2 2
      answer 3 2; settle; ack 0 0; ack 1 0; ack 2 0; ack 3 0; settle; recv
      send 2 30 2 12; settle; ack 2 0; later; settle; } > "$dir/answer-$mode"
done

# Both ways at once for one peer, for ids below and above the agent's.
for peer in 1 2; do
    { byte 4; send $peer 20 1; dial 0 $peer 0 0; settle; answer 1 $peer
      answer 2 $peer; answer 3 $peer; settle; am 0 2 20 0 0 0; settle; recv
      ack 0 0; ack 1 0; settle; } > "$dir/tie-break-$peer"
done

# Failover: frames in flight on the active connection, which is reset;
# then the other path too (restoring), and the agent dials both again
# (acks are the peer's heartbeats on the bulk connections meanwhile).
{ byte 4; send 0 100 8; settle; answer 0 0; answer 1 0; answer 2 0
  answer 3 0; step $((4 << 3)); settle; ack 0 0; ack 1 0; ack 2 0; ack 3 0
  close_conn 0 1; settle; send 0 100 4; close_conn 1 1; step $((5 << 3))
  settle; ack 2 0; ack 3 0; step $((5 << 3)); settle; accept 0 0
  accept 1 0; hello_ack 0 0 0 0; hello_ack 1 0 0 0; settle; ack 0 0
  ack 1 0; ack 2 0; ack 3 0; step $((4 << 3)); settle; } \
    > "$dir/failover-resend"
# A peer that stops reading: the agent's writes wait for room, part-way
# through a frame, while acks and heartbeats are due.
{ byte 4; send 0 20 1; settle; answer 0 0; answer 1 0; answer 2 0
  answer 3 0; settle; deaf 0; deaf 2; send 0 0 16 15; send 0 100 16; settle
  am 0 4 40 0 0 0; later; settle; step $((5 << 3)); settle; deaf 0; deaf 2
  settle; ack 0 0; ack 2 0; settle; } > "$dir/deaf-peer"
# Silence: heartbeats, then a connection that says nothing is dropped.
{ byte 4; dial 0 0 0 0; dial 1 0 2 0; settle; step $((5 << 3)); settle
  step $((6 << 3)); settle; am 1 2 30 0 0 0; settle; recv; } \
    > "$dir/heartbeat-timeout"

# Secret: two connections of one path wait for AUTH; the second loses.
{ byte 5; hello 0 2 0 0 0; settle; hello 1 2 0 0 0; settle; auth 0 0; settle
  auth 1 0; settle; } > "$dir/secret-auth-tie-break"
# Secret: a wrong proof, then a right one; a wrong proof the other way.
{ byte 5; hello 0 0 0 0 0; settle; auth 0 1; settle; hello 1 0 0 0 0
  settle; auth 1 0; settle; am 1 2 30 0 0 0; settle; recv; } \
    > "$dir/secret-wrong-then-right"
{ byte 5; send 3 40 1; settle; accept 0 3; settle; hello_ack 0 0 $((1 << 2)) 0
  settle; accept 1 3; settle; hello_ack 1 0 0 0; settle; } \
    > "$dir/secret-wrong-hello-ack"
{ byte 4; hello 0 0 0 1 0; settle; hello 1 4 0 0 0; settle; hello 2 5 3 0 0
  settle; } > "$dir/bad-hellos"

# Order: seq 1 ahead of seq 0 on the same channel, then seq 0.
{ byte 4; dial 0 0 0 0; am 0 1 20 0 224 0; settle; am 0 1 20 0 0 0; settle
  recv; } > "$dir/order-hold-back"
# Across channels: the bulk frame overtakes.
{ byte 4; dial 0 1 0 0; dial 1 1 1 0; am 0 1 20 0 224 2; settle
  am 1 1 20 0 0 2; settle; recv; } > "$dir/order-two-channels"
# Duplicates and a gap.
{ byte 4; dial 0 0 0 0; am 0 3 20 0 0 0; settle; am 0 1 20 221 0 0; settle
  am 0 1 20 225 0 0; settle; recv; } > "$dir/dup-and-gap"

# The client does not read: backlog, PAUSE to the peer, then RESUME; with
# a backlog smaller than a frame (mode 8), the frame waits in its link.
for mode in 4 13; do
    { byte $mode; dial 0 0 0 0; big_am 0 16; settle; big_am 0 4; settle
      later; settle; recv; settle; recv; settle; } \
        > "$dir/pause-resume-agent-$mode"
done
{ byte 14; send 1 40 4; settle; answer 0 1; settle; big_am 0 16; settle
  close_conn 0 1; settle; recv; settle; } > "$dir/tiny-backlog-reset"
# The peer pauses and resumes a port the client sends to.
{ byte 4; send 0 20 1; settle; answer 0 0; answer 1 0; answer 2 0
  answer 3 0; settle; flow 0 0; settle; send 0 20 3; settle; flow 0 1
  settle; ack 0 0; settle; } > "$dir/pause-resume-peer"

# A buggy process of the agent's user writes the lane to peer 0's node:
# frames of ports without the lane, then records of frames nobody read
# (AMs for ports without the lane, ACKs) and a record count out of range.
lane() { byte $((13)) $((0xa0 | $1 << 2)) "$2" "$3"; }  # CASE N V
{ byte 4; send 0 20 2; settle; answer 0 0; answer 1 0; answer 2 0
  answer 3 0; settle; ack 0 0; ack 1 0; am 0 4 40 0 0 0; settle; recv
  lane 1 8 3; settle; lane 6 7 0; byte 0 2 4 6 8 12 6 1; settle; recv
  am 0 2 40 0 0 0; settle; recv; lane 7 255 255; settle; ack 0 0
  settle; } > "$dir/lane-records"

# BYE, srmctl status and fault, acks for frames never sent.
{ byte 4; dial 0 0 0 0; am 0 1 20 0 0 0; settle; bye 0; settle; dial 1 0 0 0
  settle; } > "$dir/bye"
{ byte 4; send 1 20 2; settle; answer 0 1; answer 1 1; answer 2 1
  answer 3 1; settle; ctl 1; ctl $((7 << 1)); settle; ctl $((7 << 1 | 1 << 6))
  step $((6 << 3)); settle; ctl 1; } > "$dir/ctl-fault"
{ byte 4; send 0 20 2; settle; answer 0 0; settle; ack 0 240; settle
  ack 0 255; settle; } > "$dir/ack-never-sent"
{ byte 4; dial 0 0 0 0; raw 0 "garbage that is not a frame header at all";
  settle; dial 1 0 0 0; close_conn 1 0; settle; } > "$dir/garbage"

# Two AMs numbered alike were both held back; once the first went, the
# second stood at the head of the hold list forever, and every later frame
# of that port that came early was never delivered.
{ byte 0; dial 0 0 0 0; am 0 1 20 0 224 0; am 0 1 20 0 224 0; am 0 1 20 0 0 0
  am 0 1 20 0 0 0; am 0 1 20 0 224 0; am 0 1 20 0 0 0; settle; recv; } \
    > "$dir/regress-held-duplicate"
# A paused peer said BYE; when the client caught up, the RESUME for it was
# queued on the invalid node's channel (and its buffers kept for good).
{ byte 0; dial 0 0 0 0; big_am 0 16; settle; big_am 0 2; settle; bye 0
  settle; recv; settle; recv; settle; } > "$dir/regress-resume-to-invalid"
# A connection reset while its input waited for the full client: epoll
# reported it on every pass (the agent never slept) and it stayed ready.
{ byte 0; dial 0 0 0 0; big_am 0 16; settle; big_am 0 16; settle
  big_am 0 16; settle; close_conn 0 1; settle; step $((6 << 3)); settle
  recv; settle; } > "$dir/regress-blocked-reset"
# With a backlog smaller than a frame (mode 8): the ring full, a small
# frame backlogged, then a frame too large for the backlog waits in its
# link. The backlog resumed the peer on every pass and the waiting frame
# paused it again: a PAUSE/RESUME storm until the client read.
# (15 frames of 64 KiB and one of 65024 bytes fill the 1 MiB ring exactly.)
{ byte 8; dial 0 0 0 0; big_am 0 15; byte 3 $((15 << 4)) 127 0 0 0 0
  am 0 1 100 0 0 0; huge_am 0 1; settle; settle; } \
    > "$dir/regress-pause-resume-storm"
# srmctl fault --mute on a connection whose writes waited for room (the
# peer had stopped reading): when the peer read again, the room woke the
# agent on every pass until the failover timeout.
{ byte 4; send 0 20 1; settle; answer 0 0; answer 1 0; answer 2 0
  answer 3 0; settle; deaf 0; deaf 2; send 0 0 16 15; send 0 100 16; settle
  ctl $((7 << 1 | 1 << 6)); settle; deaf 0; deaf 2; settle; ack 0 0
  ack 2 0; settle; } > "$dir/regress-mute-while-writes-wait"

# The agent stops with held frames, a backlog, queued and unacked frames.
# Without failover (18), closing a link at the stop fails its node, which
# told the clients through the slot table the stop had just freed.
for mode in 16 17 18; do
    name=abrupt-stop-$mode
    [ $mode = 18 ] && name=regress-stop-without-failover
    { byte $mode; dial 0 0 0 0; am 0 2 40 0 226 1; send 1 100 4; settle
      answer 1 1; answer 2 1; settle; big_am 0 16; big_am 0 2; send 1 0 8 12
      settle; } > "$dir/$name"
done

# Without failover (mode 18): a client logged frames to its direct lane
# after the node failed; the agent queued them on the invalid node's small
# channel, whose buffer it then kept. (The input fuzz_wire found, as is.)
echo 'Eg8AAAADASgA4gEACwEAZAMACgBfAQAACgEMAAsECwAAFAEACgBPAAAAXwAAAG8AAAB/AAAACgAFAAAAAAAAFQAAAAAAAAMDKAAAAAAKAAwADaQIAwIAHsEACrWtAgCQYgAACgAAbwEAAAoAA88AAAAAAAPBAAAAAAALAQAAxwAKAA==' |
    base64 -d > "$dir/regress-lane-log-to-invalid"
