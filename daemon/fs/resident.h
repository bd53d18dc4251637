/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>

/* How many of the file's pages are in the page cache now (mincore() on a read-only shared mapping, which
 * faults nothing in; the caller must own the file or have CAP_FOWNER, else the kernel answers only for
 * pages it could see anyway). 0 for an empty file. Returns 0 or a negative errno. */
int file_resident_pages(int fd, uint64_t size, uint64_t *ret);
