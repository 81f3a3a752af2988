#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# fuzz_attach_seeds.sh DIR - writes fuzz_attach's seed inputs into DIR:
# short scripts in its op encoding (see fuzz_attach.c) that reach attached
# clients and their rings at once, and the inputs of the bugs it found.
# run.sh passes DIR to the target next to its corpus.
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

# The ops; CONN is 0-3, every ATTACH asks for 1 TX ring, rings of 1 MiB.
attach() {          # CONN NAME
    byte $((1 | $1 << 3)) 0 1 4 4 0 ${#2}
    printf %s "$2"
    byte 0
}
status() { byte $((2 | $1 << 3)) 0 0 0 0; }       # CONN
settle() { byte 4 0; }
close_conn() { byte $((5 | $1 << 3)) 1; }         # CONN
tx() {              # CONN DST FIX PAYLOAD: one frame, FIX 0 = valid
    byte $((6 | $1 << 3)) 0 $(($3 | $2 << 5)) 0 0 0 0 ${#4} 0 0 0
    byte 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
    byte ${#4}
    printf %s "$4"
}
burst() {           # CONN DST COUNT KIB: COUNT frames of KIB KiB, no bytes
    byte $((6 | $1 << 3)) $(($3 - 1 << 4)) $(($2 << 5)) 0 0 0 0
    byte 0 $(($4 << 2 & 255)) $(($4 >> 6)) 0
    byte 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
}
shm() { byte $((7 | $1 << 3)) "$2" 0 0 0 0 0 0 0 0; }  # CONN VARIANT

{ attach 0 fuzz; settle; } > "$dir/attach"
{ status 0; settle; } > "$dir/status"
{ attach 0 fuzz; settle; status 1; settle; close_conn 0; settle; } \
    > "$dir/attach-status-close"
{ attach 0 fuzz; settle; tx 0 0 0 hello; settle; shm 0 0; settle; } \
    > "$dir/tx-to-self"
{ attach 0 fuzz; attach 1 peer; settle; tx 0 1 0 ping; shm 1 1; settle
  tx 1 0 0 pong; settle; } > "$dir/tx-between-two"
# Twice a TX ring's worth to a 1 MiB RX ring: full, backlog, blocked; then
# it is read.
{ attach 0 fuzz; attach 1 peer; settle; burst 0 1 16 64; settle
  burst 0 1 16 64; settle; shm 1 0; settle; shm 1 0; settle; } \
    > "$dir/rx-full-backlog"
# FDS: an ATTACH_REQ carrying two eventfds.
{ byte 3 $((1 << 2 | 1)) 0 0 1 4 4 0 0 0; settle; } > "$dir/fds-with-attach"
# FDS: MEM_REG_REQ with a memfd (how 2): 16 KiB at 0x10000; then
# MEM_DEREG_REQ of that region, and again (it is gone); then one left to the
# close.
mem_reg() { byte $((3 | $1 << 3)) $((3 << 2)) 2 0 1 16 16 0; }   # CONN
mem_dereg() { byte $((3 | $1 << 3)) $((4 << 2)) 0 0 1 0; }      # CONN
{ mem_reg 0; settle; mem_dereg 0; settle; mem_dereg 0; settle; mem_reg 0
  settle; close_conn 0; settle; } > "$dir/mem-reg-dereg-close"

# A delivered frame put the sender on the wakeup list; a broken one right
# after it in the same round dropped and freed it there.
{ attach 0 fuzz; settle; tx 0 0 0 x; tx 0 0 2 ""; settle; } \
    > "$dir/regress-drop-on-wakeup-list"
# A MEM_REG_REQ with an eventfd: the agent's failed MEM_REG_REP was taken
# for a malformed reply before the fuzzer knew the memory messages.
{ byte 3 $((3 << 2)) 0 0 1 16 16 0; settle; } > "$dir/regress-mem-reg-eventfd"
# A dropped client rang its doorbell, still in the agent's epoll set.
{ attach 0 fuzz; settle; attach 0 again; settle; tx 0 0 0 x; settle; } \
    > "$dir/regress-doorbell-after-drop"
# RMA between regions registered over connections 2 and 3, by the attached
# connections 0 and 1 (fix 0: local region, target and key valid): a PUT
# and a GET of 64 bytes, then one with the key of a region deregistered
# meanwhile.
rma() {             # CONN DST OP: a 64-byte RMA request, OP 0 PUT, 1 GET
    byte $((6 | $1 << 3)) 0 $(($2 << 5)) 0 0 0 1 112 0 0 0
    byte 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
    byte 112 0 0 0 0 0 0 0 0 "$3"
    byte 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
    byte 64 0 0 0 0 0 0 0
    for _ in $(seq 72); do byte 0; done
}
{ attach 0 fuzz; attach 1 peer; settle; mem_reg 2; mem_reg 3; settle
  rma 0 1 0; settle; shm 0 0; rma 0 1 1; settle; shm 0 0; mem_dereg 3
  settle; rma 0 1 0; settle; shm 0 0; settle; } > "$dir/rma-put-get"
