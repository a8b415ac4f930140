/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The receive filter (gm_filter.h), written as named instructions with
 * symbolic jump targets: a jump names a label, or NEXT to fall through, and
 * resolve() turns labels into the relative offsets classic BPF wants.
 */
#include "gm_filter.h"

#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <stddef.h>

#include "gm_wire.h"

enum label { NEXT, PORTS, DROP, ACCEPT, NLABELS };

struct prog {
	struct sock_filter *ins;
	unsigned n;
	unsigned at[NLABELS];                                 /* where each label stands */
	uint8_t jt[GM_FILTER_MAX_LEN], jf[GM_FILTER_MAX_LEN]; /* labels a jump names */
};

/* Then no forward jump is longer than a conditional jump's 8 bits reach. */
_Static_assert(GM_FILTER_MAX_LEN <= 256, "the filter outgrows classic BPF's jumps");

static void ld(struct prog *p, unsigned size, uint32_t off)
{
	p->ins[p->n++] = (struct sock_filter)BPF_STMT(BPF_LD | size | BPF_ABS, off);
}

static void jeq(struct prog *p, uint32_t k, enum label t, enum label f)
{
	p->jt[p->n] = t;
	p->jf[p->n] = f;
	p->ins[p->n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, 0, 0);
}

static void ret(struct prog *p, uint32_t k)
{
	p->ins[p->n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, k);
}

static void label(struct prog *p, enum label l)
{
	p->at[l] = p->n;
}

static unsigned offset(const struct prog *p, unsigned from, enum label to)
{
	return to == NEXT ? 0 : p->at[to] - from - 1;
}

static void resolve(struct prog *p)
{
	for (unsigned i = 0; i < p->n; i++) {
		struct sock_filter *s = &p->ins[i];

		if (BPF_CLASS(s->code) != BPF_JMP)
			continue;
		s->jt = (uint8_t)offset(p, i, p->jt[i]);
		s->jf = (uint8_t)offset(p, i, p->jf[i]);
	}
}

unsigned gm_filter_build(struct sock_filter *f, const struct gm_filter_spec *spec)
{
	const uint8_t *mac = spec->mac;
	uint32_t mac_hi = (uint32_t)mac[0] << 24 | mac[1] << 16 | mac[2] << 8 | mac[3];
	uint32_t mac_lo = (uint32_t)mac[4] << 8 | mac[5];
	bool any_port = spec->any_port || spec->nports > GM_FILTER_MAX_PORTS;
	struct prog p = {.ins = f};

	if (spec->ifindex > 0) {
		ld(&p, BPF_W, SKF_AD_OFF + SKF_AD_IFINDEX);
		jeq(&p, (uint32_t)spec->ifindex, NEXT, DROP);
	}
	ld(&p, BPF_H, offsetof(struct ether_header, ether_type));
	jeq(&p, spec->ethertype, NEXT, DROP);
	ld(&p, BPF_B, SKF_AD_OFF + SKF_AD_PKTTYPE);
	jeq(&p, PACKET_HOST, PORTS, NEXT);
	jeq(&p, PACKET_OUTGOING, NEXT, DROP);
	/* Outgoing: only to our own MAC (ether_dhost, 4 + 2 bytes). */
	ld(&p, BPF_W, offsetof(struct ether_header, ether_dhost));
	jeq(&p, mac_hi, NEXT, DROP);
	ld(&p, BPF_H, offsetof(struct ether_header, ether_dhost) + 4);
	jeq(&p, mac_lo, PORTS, DROP);
	if (!any_port) {
		label(&p, PORTS);
		ld(&p, BPF_H, GM_ETH_HLEN + offsetof(struct gm_hdr, dst_port));
		for (unsigned i = 0; i < spec->nports; i++)
			jeq(&p, spec->ports[i], ACCEPT, NEXT);
	}
	label(&p, DROP);
	ret(&p, 0);
	label(&p, ACCEPT);
	if (any_port)
		label(&p, PORTS);
	ret(&p, spec->keep);
	resolve(&p);
	return p.n;
}
