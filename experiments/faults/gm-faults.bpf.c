/*
 * Fault injection for net-veth.sh, attached at a veth's clsact egress
 * (this kernel has no netem: CONFIG_NET_SCH_NETEM is not set).  For gamma
 * frames only: drop LOSS, duplicate DUP, flip one bit in CORRUPT, and steer
 * REORDER (all per mille) into a slow HTB class, which delays them behind
 * later frames.  Rates are -D options; compiled by the test with
 *   clang -O2 -target bpf -c gm-faults.bpf.c
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>

#define SEC(name) __attribute__((section(name), used))

#ifndef LOSS
#define LOSS 50
#endif
#ifndef DUP
#define DUP 50
#endif
#ifndef CORRUPT
#define CORRUPT 10
#endif
#ifndef REORDER
#define REORDER 250
#endif
#ifndef ETHERTYPE_BE
#define ETHERTYPE_BE 0xB588 /* 0x88B5 as skb->protocol holds it */
#endif
#define SEEN       0x676d  /* mark of frames already handled (and of our clones) */
#define SLOW_CLASS 0x10020 /* HTB 1:20 */

static __u32 (*prandom)(void) = (void *)BPF_FUNC_get_prandom_u32;
static long (*clone_redirect)(struct __sk_buff *skb, __u32 ifindex,
                              __u64 flags) = (void *)BPF_FUNC_clone_redirect;
static long (*load_bytes)(const struct __sk_buff *skb, __u32 off, void *to,
                          __u32 len) = (void *)BPF_FUNC_skb_load_bytes;
static long (*store_bytes)(struct __sk_buff *skb, __u32 off, const void *from, __u32 len,
                           __u64 flags) = (void *)BPF_FUNC_skb_store_bytes;

SEC("tc") int faults(struct __sk_buff *skb)
{
	if (skb->protocol != ETHERTYPE_BE || skb->mark == SEEN)
		return TC_ACT_OK;
	skb->mark = SEEN;
	if (prandom() % 1000 < LOSS)
		return TC_ACT_SHOT;
	if (prandom() % 1000 < DUP)
		clone_redirect(skb, skb->ifindex, 0);
	if (prandom() % 1000 < CORRUPT && skb->len > 15) {
		__u32 off = 14 + prandom() % (skb->len - 14);
		__u8 b;

		if (!load_bytes(skb, off, &b, 1)) {
			b ^= (__u8)(1u << (prandom() % 8));
			store_bytes(skb, off, &b, 1, 0);
		}
	}
	if (prandom() % 1000 < REORDER)
		skb->priority = SLOW_CLASS;
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
