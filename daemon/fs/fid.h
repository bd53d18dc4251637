/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* A file's stable identity: the filesystem id (statfs f_fsid, which fanotify reports) plus the kernel's file
 * handle. On ext4 the handle is FILEID_INO32_GEN: inode number and generation, so a file deleted and
 * replaced by a new one with the same inode number gets a different key. Stable across reboots and
 * across loop-device renumbering (the fsid derives from the filesystem UUID). Room for 16 bytes: ext4's
 * handles are 8 (16 with the parent, which fanotify does not report), and only ext4 is watched; a longer
 * handle is refused where it enters (an event, a boot record, a database row). Every session file holds
 * one: 8 bytes fewer per file is 0.8 MiB fewer per 100,000 files recorded. */
#define FID_HANDLE_MAX 16

typedef struct FileKey {
        uint64_t fsid;
        int32_t handle_type;
        uint32_t handle_len;
        uint8_t handle[FID_HANDLE_MAX];
} FileKey;

static inline bool file_key_equal(const FileKey *a, const FileKey *b) {
        return a->fsid == b->fsid && a->handle_type == b->handle_type && a->handle_len == b->handle_len &&
                memcmp(a->handle, b->handle, a->handle_len) == 0;
}

/* FNV-1a over the meaningful bytes */
static inline uint64_t file_key_hash(const FileKey *k) {
        uint64_t h = 1469598103934665603ULL;
        const uint8_t *p = (const uint8_t *) &k->fsid;
        for (size_t i = 0; i < sizeof k->fsid; i++)
                h = (h ^ p[i]) * 1099511628211ULL;
        h = (h ^ (uint32_t) k->handle_type) * 1099511628211ULL;
        for (uint32_t i = 0; i < k->handle_len; i++)
                h = (h ^ k->handle[i]) * 1099511628211ULL;
        return h;
}
