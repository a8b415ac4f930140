/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The job's secret: gamma authenticates every frame with a MAC under the
 * endpoint's auth_key when that is 16 bytes or more (provider/gm_mac.h),
 * so that a station on the segment without the secret can neither inject
 * into, nor reset, nor spoof a peer of the job.
 *
 * The secret is random, never derived from anything another user can learn
 * (the job id is in every process listing).  Every process makes one with
 * getrandom and opens its endpoints with it: the address must be in the
 * modex before the exchange, and nobody can reach an endpoint under a
 * secret only its process knows, so nothing arrives before the job's secret
 * is in force (frames sent to it earlier are counted as bad_key and
 * retransmitted).  Each process publishes its secret through the modex
 * (PMIx: visible to the job's processes only); in add_procs, after the
 * exchange, every process takes the one of the lowest rank that published
 * one, the same for all, and switches its endpoints to it with
 * fi_setopt(FI_OPT_GAMMA_AUTH_KEY).  The first add_procs comes before any
 * send, so no frame of ours leaves under our own secret.
 *
 * A process of another job (MPI_Comm_spawn, MPI_Comm_connect) checks
 * frames under its own job's secret, chosen there by the same rule: after
 * the connect, PMIx gives us that job's modex too, so we seal what we send
 * it with that secret (FI_OPT_GAMMA_PEER_AUTH_KEY), and it does the same
 * with ours.  Both secrets stay known to their jobs' processes only.
 */
#include "btl_gamma.h"

#include <string.h>
#include <sys/random.h>

#include <rdma/fi_errno.h>

#include "fi_gamma.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#define GAMMA_SECRET_LEN 32
#define GAMMA_SECRET_KEY "btl.gamma.secret"

static uint8_t local_secret[GAMMA_SECRET_LEN];
static bool local_made, job_applied;

const uint8_t *gamma_secret_local(size_t *len)
{
	if (!local_made) {
		if (getrandom(local_secret, sizeof(local_secret), 0) != sizeof(local_secret))
			return NULL;
		local_made = true;
	}
	*len = sizeof(local_secret);
	return local_secret;
}

int gamma_secret_publish(void)
{
	size_t len;
	const uint8_t *s = gamma_secret_local(&len);
	int rc;

	if (!s)
		return OPAL_ERROR;
	OPAL_MODEX_SEND_STRING(rc, OPAL_PMIX_GLOBAL, GAMMA_SECRET_KEY, (void *)s, len);
	return rc;
}

static int apply(const uint8_t *secret, size_t len)
{
	mca_btl_gamma_component_t *c = &mca_btl_gamma_component;

	for (int i = 0; i < c->num_modules; i++) {
		mca_btl_gamma_module_t *m = c->modules[i];
		uint32_t id = 0;
		size_t idlen = sizeof(id);
		int rc;

		if (!m || !m->ep)
			continue;
		rc = fi_setopt(&m->ep->fid, FI_OPT_ENDPOINT, FI_OPT_GAMMA_AUTH_KEY, secret, len);
		if (rc) {
			gamma_show_help("secret refused", m->ifname, fi_strerror(-rc),
			                gamma_hostname());
			return OPAL_ERROR;
		}
		if (!fi_getopt(&m->ep->fid, FI_OPT_ENDPOINT, FI_OPT_GAMMA_KEY_ID, &id, &idlen))
			opal_output_verbose(10, opal_btl_base_framework.framework_output,
			                    "btl gamma: %s: job key 0x%08x (the secret's id)",
			                    m->ifname, id);
	}
	return OPAL_SUCCESS;
}

/* The secret of job jobid: that of its lowest rank up to vpid that published one. */
static uint8_t *job_secret(opal_jobid_t jobid, opal_vpid_t vpid)
{
	for (opal_vpid_t v = 0; v <= vpid; v++) {
		opal_process_name_t n = {.jobid = jobid, .vpid = v};
		uint8_t *d = NULL;
		size_t sz = 0;
		int rc;

		OPAL_MODEX_RECV_STRING(rc, GAMMA_SECRET_KEY, &n, &d, &sz);
		if (rc == OPAL_SUCCESS && sz == GAMMA_SECRET_LEN)
			return d;
		free(d);
	}
	return NULL;
}

int gamma_secret_bind(mca_btl_gamma_module_t *m, const struct opal_proc_t *proc, fi_addr_t addr)
{
	uint8_t *secret = job_secret(proc->proc_name.jobid, proc->proc_name.vpid);
	int rc;

	if (!secret) {
		gamma_show_help("peer secret", m->ifname, OPAL_NAME_PRINT(proc->proc_name),
		                opal_get_proc_hostname(proc), "its job published no secret",
		                gamma_hostname());
		return OPAL_ERR_UNREACH;
	}
	rc = fi_setopt(&m->ep->fid, FI_OPT_ENDPOINT, FI_OPT_GAMMA_PEER_AUTH_KEY,
	               &(struct fi_gamma_peer_key){addr, secret, GAMMA_SECRET_LEN},
	               sizeof(struct fi_gamma_peer_key));
	explicit_bzero(secret, GAMMA_SECRET_LEN);
	free(secret);
	if (rc) {
		gamma_show_help("peer secret", m->ifname, OPAL_NAME_PRINT(proc->proc_name),
		                opal_get_proc_hostname(proc), fi_strerror(-rc), gamma_hostname());
		return OPAL_ERR_UNREACH;
	}
	return OPAL_SUCCESS;
}

int gamma_secret_apply(void)
{
	opal_process_name_t me = OPAL_PROC_MY_NAME;
	const uint8_t *best;
	uint8_t *found = NULL;
	size_t len;
	int rc;

	if (job_applied)
		return OPAL_SUCCESS;
	best = gamma_secret_local(&len);
	if (!best)
		return OPAL_ERROR;
	/*
	 * By name, not from add_procs' list: ob1 may add peers one at a time.
	 * Normally one look-up, rank 0's; ranks without gamma publish nothing.
	 */
	if (me.vpid > 0)
		found = job_secret(me.jobid, me.vpid - 1);
	if (found)
		best = found;
	rc = apply(best, len);
	if (found) {
		explicit_bzero(found, GAMMA_SECRET_LEN);
		free(found);
	}
	job_applied = rc == OPAL_SUCCESS;
	return rc;
}
