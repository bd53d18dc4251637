/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <string.h>

#include "common/macro.h"
#include "initramfs/initramfs-util.h"

static const char *const initramfs_mode_table[_INITRAMFS_MODE_MAX] = {
        [INITRAMFS_ON] = "yes",
        [INITRAMFS_PREFETCH_ONLY] = "prefetch",
        [INITRAMFS_OFF] = "no",
};

DEFINE_STRING_TABLE(initramfs_mode, InitramfsMode)

#define SWITCH "seekless.initramfs="

InitramfsMode initramfs_mode_from_cmdline(const char *cmdline, bool *ret_force_fsck, char *ret_bad, size_t bad_size) {
        InitramfsMode mode = INITRAMFS_ON;
        bool force = false;
        const char *p = cmdline;

        if (ret_bad && bad_size > 0)
                ret_bad[0] = 0;
        while (p && *p) {
                size_t n;
                char w[256];

                p += strspn(p, " \t\n");
                n = strcspn(p, " \t\n");
                if (n == 0)
                        break;
                snprintf(w, sizeof w, "%.*s", (int) MIN(n, sizeof w - 1), p);
                p += n;
                if (streq(w, "forcefsck") || streq(w, "fsck.mode=force"))
                        force = true;
                else if (startswith(w, SWITCH)) {
                        const char *v = w + strlen(SWITCH);

                        if (streq(v, "no") || streq(v, "0") || streq(v, "off") || streq(v, "false"))
                                mode = INITRAMFS_OFF;
                        else if (streq(v, "yes") || streq(v, "1") || streq(v, "on") || streq(v, "true"))
                                mode = INITRAMFS_ON;
                        else if (streq(v, "prefetch"))
                                mode = INITRAMFS_PREFETCH_ONLY;
                        else if (ret_bad && bad_size > 0)
                                snprintf(ret_bad, bad_size, "%s", w);
                }
        }
        if (ret_force_fsck)
                *ret_force_fsck = force;
        return mode;
}

static uint16_t le16(const uint8_t *b, size_t o) {
        return (uint16_t) (b[o] | b[o + 1] << 8);
}

static uint32_t le32(const uint8_t *b, size_t o) {
        return (uint32_t) b[o] | (uint32_t) b[o + 1] << 8 | (uint32_t) b[o + 2] << 16 | (uint32_t) b[o + 3] << 24;
}

#define EXT4_MAGIC 0xEF53
#define EXT4_STATE_VALID 0x1
#define EXT4_STATE_ERROR 0x2
#define EXT4_STATE_ORPHAN 0x4
#define EXT4_INCOMPAT_RECOVER 0x4
#define EXT4_INCOMPAT_JOURNAL_DEV 0x8
#define EXT4_INCOMPAT_EXTENTS 0x40

int ext4_super_parse(const uint8_t *b, Ext4Super *ret) {
        Ext4Super s = {
                .mnt_count = le16(b, 0x34),
                .max_mnt_count = (int16_t) le16(b, 0x36),
                .magic = le16(b, 0x38),
                .state = le16(b, 0x3A),
                .lastcheck = le32(b, 0x40),
                .checkinterval = le32(b, 0x44),
                .feature_incompat = le32(b, 0x60),
                .error_count = le32(b, 0x194),
        };

        if (s.magic != EXT4_MAGIC)
                return -EBADMSG;
        *ret = s;
        return 0;
}

const char *ext4_super_unclean(const Ext4Super *s, time_t now) {
        if (s->magic != EXT4_MAGIC)
                return "is not ext4";
        if (s->feature_incompat & EXT4_INCOMPAT_JOURNAL_DEV)
                return "is an external journal";
        if (!(s->feature_incompat & EXT4_INCOMPAT_EXTENTS))
                return "has no extents (ext2 or ext3)";
        if (s->feature_incompat & EXT4_INCOMPAT_RECOVER)
                return "needs a journal recovery";
        if (!(s->state & EXT4_STATE_VALID))
                return "was not cleanly unmounted";
        if (s->state & (EXT4_STATE_ERROR | EXT4_STATE_ORPHAN))
                return "has errors recorded";
        if (s->error_count > 0)
                return "has errors recorded";
        if (s->max_mnt_count > 0 && s->mnt_count >= (uint16_t) s->max_mnt_count)
                return "is due for a check (mount count)";
        if (now > 0 && s->checkinterval > 0 && (uint64_t) now >= (uint64_t) s->lastcheck + s->checkinterval)
                return "is due for a check (check interval)";
        return NULL;
}
