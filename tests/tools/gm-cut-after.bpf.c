/*
 * A link that dies in the middle of a job, at a point fixed by the job's
 * own traffic rather than by a clock: attached at a clsact hook, it lets
 * the first CUT_AFTER gamma frames through and drops every later one.
 * Each attachment has its own count.  Compiled by the test that uses it
 * (npb-rail-cut.sh):
 *   clang -O2 -target bpf -DCUT_AFTER=N -c gm-cut-after.bpf.c
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>

#define SEC(name) __attribute__((section(name), used))

#ifndef CUT_AFTER
#define CUT_AFTER 1000
#endif
#define ETHERTYPE_BE 0xB588 /* 0x88B5 as skb->protocol holds it */

static volatile __u32 passed;

SEC("tc") int cut_after(struct __sk_buff *skb)
{
	if (skb->protocol != ETHERTYPE_BE)
		return TC_ACT_OK;
	if (passed >= CUT_AFTER)
		return TC_ACT_SHOT;
	__sync_fetch_and_add(&passed, 1);
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
