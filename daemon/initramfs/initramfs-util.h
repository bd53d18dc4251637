/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* The initramfs stage's decisions that need no device: its switch on the kernel command line, and whether
 * the root filesystem's superblock lets a brief read-write pass happen before the boot's own check. */

typedef enum InitramfsMode {
        INITRAMFS_ON,                   /* prefetch, and the early pass when files wait for it (default) */
        INITRAMFS_PREFETCH_ONLY,        /* seekless.initramfs=prefetch: no early pass */
        INITRAMFS_OFF,                  /* seekless.initramfs=no (0, off, false) */
        _INITRAMFS_MODE_MAX,
        _INITRAMFS_MODE_INVALID = -EINVAL,
} InitramfsMode;

const char *initramfs_mode_to_string(InitramfsMode m);
InitramfsMode initramfs_mode_from_string(const char *s);

/* What the kernel command line (the text of /proc/cmdline) asks: the mode (the last seekless.initramfs=
 * wins; a value it does not know changes nothing and is copied, the whole word, to ret_bad of bad_size
 * bytes, which may be NULL), and whether it forces a check of the filesystems (fsck.mode=force or
 * forcefsck). */
InitramfsMode initramfs_mode_from_cmdline(const char *cmdline, bool *ret_force_fsck, char *ret_bad, size_t bad_size);

/* The fields of an ext4 superblock the early pass's decision reads (doc/kernel.md §10). */
typedef struct Ext4Super {
        uint16_t magic;
        uint16_t state;                 /* 1 valid (cleanly unmounted or journaled), 2 errors, 4 orphans */
        uint32_t feature_incompat;
        uint32_t error_count;
        uint16_t mnt_count;
        int16_t max_mnt_count;          /* -1 or 0: not checked by count */
        uint32_t lastcheck, checkinterval;      /* seconds */
} Ext4Super;

#define EXT4_SUPER_OFFSET 1024
#define EXT4_SUPER_SIZE 1024

/* Parses the 1024 bytes of a superblock (at byte 1024 of the device). -EBADMSG: not ext4's magic. */
int ext4_super_parse(const uint8_t *b, Ext4Super *ret);
/* Why the filesystem may not be written before the boot's own check, as a phrase ("needs a journal
 * recovery", ...), or NULL when it is clean, checked in its time, with extents. now: the wall clock (0:
 * not known, the interval not judged). */
const char *ext4_super_unclean(const Ext4Super *s, time_t now);
