/* SPDX-License-Identifier: BSD-2-Clause */
/* Byte ranges of an iovec array: length, copies in and out, slices. */
#include "gm_msg.h"

#include <string.h>

#include "gm_wire.h"

uint64_t gm_iov_len(const struct iovec *iov, size_t cnt)
{
	uint64_t n = 0;

	for (size_t i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

/* Copy len bytes from src into the iov at byte offset off; returns bytes copied. */
size_t gm_iov_copy_to(const struct iovec *iov, size_t cnt, uint64_t off, const void *src,
                      size_t len)
{
	return gm_iov_copy_to_crc(iov, cnt, off, src, len, NULL);
}

/* The same, chaining *crc over the bytes copied unless crc is NULL. */
size_t gm_iov_copy_to_crc(const struct iovec *iov, size_t cnt, uint64_t off, const void *src,
                          size_t len, uint32_t *crc)
{
	size_t done = 0;

	for (size_t i = 0; i < cnt && done < len; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		size_t n = iov[i].iov_len - off;
		if (n > len - done)
			n = len - done;
		char *dst = (char *)iov[i].iov_base + off;
		if (crc)
			*crc = gm_crc32c_copy(*crc, dst, (const char *)src + done, n);
		else
			memcpy(dst, (const char *)src + done, n);
		done += n;
		off = 0;
	}
	return done;
}

size_t gm_iov_copy_from(const struct iovec *iov, size_t cnt, uint64_t off, void *dst, size_t len)
{
	size_t done = 0;

	for (size_t i = 0; i < cnt && done < len; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		size_t n = iov[i].iov_len - off;
		if (n > len - done)
			n = len - done;
		memcpy((char *)dst + done, (const char *)iov[i].iov_base + off, n);
		done += n;
		off = 0;
	}
	return done;
}

size_t gm_iov_slice(const struct iovec *iov, size_t cnt, uint64_t off, size_t len,
                    struct iovec *out)
{
	size_t n = 0;

	for (size_t i = 0; i < cnt && len; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		size_t l = iov[i].iov_len - off;
		if (l > len)
			l = len;
		out[n].iov_base = (char *)iov[i].iov_base + off;
		out[n].iov_len = l;
		n++;
		len -= l;
		off = 0;
	}
	return n;
}
