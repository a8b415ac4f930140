/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fuzz input language, shared by the harness (fuzz_frame.c) and the
 * seed generator (mkcorpus.c).  An input is a script of records; each
 * starts with an op byte, taken modulo FZ_NOPS:
 *
 *   FRAME  ctl peer len16 gm_hdr[60] body[len] [cut]
 *          a frame from fake peer (peer % FZ_NPEERS).  Unless ctl says
 *          "raw", the harness repairs what a live sender would get right
 *          (version, type range, len, port, key, session, seq, flags,
 *          checksum), so mutations reach the upper half's handlers; each
 *          raw bit keeps the fuzzer's bytes for one of those instead.
 *   RECV   flags len16 tag   post a receive (buffer malloc'd to exactly len)
 *   SEND   flags len16 dest  send a message to a fake peer (eager, medium
 *                            or rendezvous by length), so CTS and acks
 *                            have something to act on
 *   TICK   ms                advance the clock and flush (timers, acks,
 *                            retransmits, peer timeouts)
 *   CANCEL idx               fi_cancel a posted receive
 *
 * Lengths are big-endian; len16 counts units of 1 byte, or of 64 bytes
 * when flags has FZ_BIG.
 */
#ifndef FUZZ_FORMAT_H
#define FUZZ_FORMAT_H

enum { FZ_FRAME = 0, FZ_RECV = 4, FZ_SEND = 5, FZ_TICK = 6, FZ_CANCEL = 7, FZ_NOPS = 8 };

/* FRAME ctl bits: keep the fuzzer's bytes for ... */
#define FZ_RAW_CSUM  0x01 /* the checksum (else sealed) */
#define FZ_RAW_ADDR  0x02 /* dst_port, key, session */
#define FZ_RAW_SEQ   0x04 /* seq (else the peer's next in-order seq) */
#define FZ_RAW_SHAPE 0x08 /* version, type, len */
#define FZ_CUT       0x10 /* truncate the frame to a length from one more byte */
#define FZ_RAW_FLAGS 0x20 /* flags and ack */

/* RECV / SEND flags */
#define FZ_TAGGED   0x01
#define FZ_MULTI    0x02 /* RECV: FI_MULTI_RECV */
#define FZ_DIRECTED 0x04 /* RECV: only from peer (tag & 1) */
#define FZ_BIG      0x08 /* len16 in units of 64 bytes */
#define FZ_DATA     0x10 /* SEND: remote CQ data */

#define FZ_NPEERS   2
#define FZ_MTU      1500
#define FZ_OVERSIZE 256 /* frames may exceed the MTU by this much */
#define FZ_PORT     7
#define FZ_KEY      0x5eed1234u
#define FZ_SESSION  1000u /* our port's session: our seqs start here */

#endif /* FUZZ_FORMAT_H */
