/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <sys/fanotify.h>

#include "fid.h"

/* The file key of one FAN_REPORT_FID event (shared by the recorder and the boot collector). Returns 1 and
 * the key for a file event, 0 for events to ignore, -EBADMSG for a malformed record. */
int fanotify_event_file_key(const struct fanotify_event_metadata *m, FileKey *ret);
