/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
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

        while (p + sizeof(struct fanotify_event_info_header) <= end) {
                const struct fanotify_event_info_header *h = (const void *) p;
                const struct fanotify_event_info_fid *fid;
                const struct file_handle *fh;

                if (h->len < sizeof *h || p + h->len > end)
                        return -EBADMSG;
                if (h->info_type != FAN_EVENT_INFO_TYPE_FID) {
                        p += h->len;
                        continue;
                }
                if (h->len < sizeof *fid + sizeof *fh)
                        return -EBADMSG;
                fid = (const void *) p;
                fh = (const struct file_handle *) fid->handle;
                if (sizeof *fid + sizeof *fh + fh->handle_bytes > h->len)
                        return -EBADMSG;
                if (fh->handle_bytes > FID_HANDLE_MAX)
                        return 0;     /* not an ext4-sized handle; we don't record such filesystems */
                FileKey k = { .handle_type = fh->handle_type, .handle_len = fh->handle_bytes };
                memcpy(&k.fsid, &fid->fsid, sizeof k.fsid);
                memcpy(k.handle, fh->f_handle, fh->handle_bytes);
                *ret = k;
                return 1;
        }
        return 0;
}
