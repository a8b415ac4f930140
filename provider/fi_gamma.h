/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gamma's extension to the libfabric API (installed as <rdma/fi_gamma.h>).
 *
 * FI_OPT_GAMMA_AUTH_KEY (level FI_OPT_ENDPOINT, fi_setopt only): replace an
 * endpoint's auth_key after it was opened, with the sizes auth_key takes
 * (0, 4, or a secret of 16 to 64 bytes).  For a job that publishes an
 * endpoint's address before its secret is known: open it with a random
 * secret of its own (nobody can reach it meanwhile; their frames are counted
 * and retransmitted), then set the job's.  Frames still queued are sealed
 * with the new key when they leave.
 *
 * FI_OPT_GAMMA_PEER_AUTH_KEY (level FI_OPT_ENDPOINT, fi_setopt only, a
 * struct fi_gamma_peer_key): frames to one address of the AV are sealed
 * with that peer's secret (16 to 64 bytes) instead of the endpoint's: a
 * peer of another job, which has a secret of its own (MPI_Comm_spawn,
 * MPI_Comm_connect).  Each side names the other's secret; frames from the
 * peer still come under the endpoint's own.  The setting lasts as long as
 * the endpoint; frames still queued are sealed with it when they leave.
 * -FI_EINVAL: an address not in the AV, or a secret of another size.
 *
 * FI_OPT_GAMMA_KEY_ID (fi_getopt only, a uint32_t): the key the endpoint's
 * frames carry in the clear, the 4-byte key or the secret's id; it gives
 * away nothing about the secret.
 *
 * FI_OPT_GAMMA_MSG_FRAMES (fi_getopt only, a struct fi_gamma_msg_frames):
 * the bytes of a message that its first frame carries and that each later
 * frame carries (the smallest rail's MTU).  A message of first + k * next
 * bytes fills 1 + k frames to the last byte; a caller that chooses its
 * message sizes (a BTL's fragments) sends no partly empty frames.
 * Messages above FI_GAMMA_RNDV_THRESHOLD go by rendezvous and do not
 * follow this.
 *
 * FI_GAMMA_ERR_MSG_CRC: the prov_errno of a receive's error completion
 * (fi_cq_readerr, err FI_EIO) when the message failed its end-to-end CRC:
 * its bytes changed between the sender's checksum and the wire, which a
 * sender that writes into (or receives into) a buffer it is still sending
 * from causes.  fi_cq_strerror says so.  Other error completions have
 * prov_errno equal to err.
 */
#ifndef FI_GAMMA_H
#define FI_GAMMA_H

#include <rdma/fabric.h>

#define FI_PROV_SPECIFIC_GAMMA (0x6a3 << 16)

enum {
	FI_OPT_GAMMA_AUTH_KEY = -FI_PROV_SPECIFIC_GAMMA,
	FI_OPT_GAMMA_KEY_ID,
	FI_OPT_GAMMA_MSG_FRAMES,
	FI_OPT_GAMMA_PEER_AUTH_KEY,
};

#define FI_GAMMA_ERR_MSG_CRC (FI_PROV_SPECIFIC_GAMMA | 1)

struct fi_gamma_peer_key {
	fi_addr_t addr;  /* the peer, as fi_av_insert returned it */
	const void *key; /* its secret */
	size_t key_len;
};

struct fi_gamma_msg_frames {
	size_t first; /* message bytes in its first frame */
	size_t next;  /* ...and in each later one */
};

#endif /* FI_GAMMA_H */
