/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>

#include "record/fid-event.h"

bool fanotify_event_next(const void *buf, size_t n, size_t *offset, FanotifyEvent *ret) {
        const char *p = (const char *) buf + *offset;

        if (*offset > n || n - *offset < sizeof ret->meta)
                return false;
        memcpy(&ret->meta, p, sizeof ret->meta);
        if (ret->meta.event_len < sizeof ret->meta || ret->meta.event_len > n - *offset ||
            ret->meta.metadata_len < sizeof ret->meta || ret->meta.metadata_len > ret->meta.event_len)
                return false;
        ret->record = p;
        *offset += ret->meta.event_len;
        return true;
}

/* The first info record of `type`: its fsid and handle as a key, and where the record ends. Returns 1, 0 when
 * there is none (or the handle is larger than ext4's: a filesystem we don't record), -EBADMSG when a record
 * is malformed. */
static int event_fid_record(const FanotifyEvent *e, uint8_t type, FileKey *ret, const char **ret_tail,
                            const char **ret_end) {
        const char *p = e->record + e->meta.metadata_len, *end = e->record + e->meta.event_len;

        /* The info records are copied out as well: a record's length need not keep the next one aligned
         * (the kernel's are, a corrupt buffer's are not), and a misaligned read is undefined. */
        while ((size_t) (end - p) >= sizeof(struct fanotify_event_info_header)) {
                const size_t fid_size = sizeof(struct fanotify_event_info_fid);
                struct fanotify_event_info_header h;
                struct file_handle fh;
                FileKey k;

                memcpy(&h, p, sizeof h);
                if (h.len < sizeof h || h.len > (size_t) (end - p))
                        return -EBADMSG;
                if (h.info_type != type) {
                        p += h.len;
                        continue;
                }
                if (h.len < fid_size + sizeof fh)
                        return -EBADMSG;
                memcpy(&fh, p + fid_size, sizeof fh);
                if (fid_size + sizeof fh + fh.handle_bytes > h.len)
                        return -EBADMSG;
                if (fh.handle_bytes > FID_HANDLE_MAX)
                        return 0;     /* not an ext4-sized handle; we don't record such filesystems */
                k = (FileKey) { .handle_type = fh.handle_type, .handle_len = fh.handle_bytes };
                memcpy(&k.fsid, p + offsetof(struct fanotify_event_info_fid, fsid), sizeof k.fsid);
                memcpy(k.handle, p + fid_size + sizeof fh, fh.handle_bytes);
                *ret = k;
                if (ret_tail)
                        *ret_tail = p + fid_size + sizeof fh + fh.handle_bytes;
                if (ret_end)
                        *ret_end = p + h.len;
                return 1;
        }
        return 0;
}

int fanotify_event_file_key(const FanotifyEvent *e, FileKey *ret) {
        return event_fid_record(e, FAN_EVENT_INFO_TYPE_FID, ret, NULL, NULL);
}

int fanotify_event_dir_name(const FanotifyEvent *e, FileKey *ret_dir, const char **ret_name) {
        const char *name, *end;
        FileKey dir;
        int r;

        r = event_fid_record(e, FAN_EVENT_INFO_TYPE_DFID_NAME, &dir, &name, &end);
        if (r <= 0)
                return r;
        /* a name, NUL-terminated inside the record (the kernel pads the record with NULs after it) */
        if (name >= end || !memchr(name, 0, (size_t) (end - name)))
                return -EBADMSG;
        *ret_dir = dir;
        *ret_name = name;
        return 1;
}
