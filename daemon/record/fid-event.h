/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/fanotify.h>

#include "fs/fid.h"

/* One event of a buffer read from a fanotify fd: its fixed part copied out, and where the whole record
 * lies. A record that follows one with an FID info record is only 4-byte aligned (a 32-bit handle makes
 * the record 52 bytes long), while the fixed part holds a 64-bit mask: it must not be read in place. */
typedef struct FanotifyEvent {
        struct fanotify_event_metadata meta;
        const char *record;
} FanotifyEvent;

/* Steps through buf[0..n) from *offset (0 at first): fills *ret with the event there and moves *offset to
 * the next one. Returns false at the end of the buffer, or at a record too short or running past it. */
bool fanotify_event_next(const void *buf, size_t n, size_t *offset, FanotifyEvent *ret);

/* The file key of one FAN_REPORT_FID event (shared by the recorder and the boot collector). Returns 1 and
 * the key for a file event, 0 for events to ignore, -EBADMSG for a malformed record. */
int fanotify_event_file_key(const FanotifyEvent *e, FileKey *ret);

/* The parent directory's key and the file's name of one FAN_REPORT_DFID_NAME event (the name as the reader
 * reached the file; *ret_name points into the event's record). Returns 1, 0 when the event carries none,
 * -EBADMSG for a malformed record. */
int fanotify_event_dir_name(const FanotifyEvent *e, FileKey *ret_dir, const char **ret_name);
