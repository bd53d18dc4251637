/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>

/* How many of the file's pages are in the page cache now: cachestat(2), whose cost is that of the cached
 * pages, or where the kernel has none (before 6.5) mincore() on a read-only shared mapping, which faults
 * nothing in but walks every page of the file: those walks take pages from *budget, and a file with more
 * than is left is not looked at (-EFBIG), so that a huge sparse file cannot make it walk for seconds. The
 * caller must own the file or have CAP_FOWNER, else the kernel answers only for pages it could see anyway
 * (mincore) or refuses (cachestat, then mincore). 0 for an empty file. Returns 0 or a negative errno. */
int file_resident_pages(int fd, uint64_t size, uint64_t *budget, uint64_t *ret);

/* Where the kernel has no cachestat(2), whether a file is warm is told by walking its pages: at most this
 * many per stored session (16 GiB of files, a fraction of a second); files beyond count as cold. */
#define RESIDENT_WALK_PAGES (UINT64_C(4) << 20)

/* How many pages of [offset, offset + length) are in the page cache: cachestat(2) only (a range needs no
 * walk budget); -EOPNOTSUPP before 6.5, -EPERM for a caller who may not ask (see above). Works on a block
 * device's fd too (its page cache: ext4's metadata). */
int range_cached_pages(int fd, uint64_t offset, uint64_t length, uint64_t *ret);

/* Which of the n pages from page first on are in the page cache now, a byte each in vec (bit 0):
 * mincore() on a read-only shared mapping of them, which faults nothing in (pages past the end of the
 * file are not). fd must be open for reading. 0 or a negative errno. */
int range_resident(int fd, uint64_t first, size_t n, unsigned char *vec);
