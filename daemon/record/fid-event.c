/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>

#include "fid-event.h"

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

int fanotify_event_file_key(const FanotifyEvent *e, FileKey *ret) {
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
                if (h.info_type != FAN_EVENT_INFO_TYPE_FID) {
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
                return 1;
        }
        return 0;
}
