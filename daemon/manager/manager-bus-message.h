/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "common/macro.h"

/* The marshalling the Manager interface's handlers share (manager-bus.c): the caller check, typed database
 * errors, escaped paths and profile names, rows of list replies, lists of mount points, and calls answered
 * later. Knows the messages, not what the Manager does with them. Each returns what the handler should
 * return when it is not 0 (error set, or a negative errno). */

typedef struct Manager Manager;

/* Only root may see file paths: 0 for root (or CAP_SYS_ADMIN), else AccessDenied saying it may not
 * `what`. */
int bus_check_root(sd_bus_message *message, const char *what, sd_bus_error *error);
/* A database error r as SEEKLESS_ERROR_DATABASE ("Failed to `what`: ..."); -ENOMEM as it is. */
int bus_reply_db_error(sd_bus_error *error, int r, const char *what);
/* A path or profile name, escaped (escape.h). */
int bus_append_path(sd_bus_message *reply, const char *path);

/* Rows of list replies: fields is one letter per field, the D-Bus type or 'p' for an escaped path. Open the
 * array, append each row (the values as sd_bus_message_append() takes them; const char * for 'p'), then
 * bus_send_rows() closes it and sends the reply, or returns the error met on the way. */
int bus_open_rows(sd_bus_message *reply, const char *fields);
int bus_append_row(sd_bus_message *reply, const char *fields, ...);
int bus_send_rows(sd_bus_message *reply, int r);

/* A profile name as received (escaped) into the bytes it stands for; InvalidArgs for a bad one. */
int bus_unescape_name(const char *shown, char **ret, sd_bus_error *error);
/* bus_check_root(), then the name read and unescaped: *ret_shown as received, *ret its bytes. */
int bus_read_profile_name(sd_bus_message *message, const char *what, const char **ret_shown, char **ret,
                          sd_bus_error *error);
/* The "as" of mount points, normalised, each once; NULL for an empty list. After bus_check_root(). */
int bus_read_mounts(sd_bus_message *message, char ***ret, sd_bus_error *error);

/* A method call answered later, from the loop, once the worker is done: the call (referenced) and what
 * its handler read. */
typedef struct BusCall {
        Manager *m;
        sd_bus_message *message;
        char **mounts;
        char *name, *shown;
} BusCall;

BusCall *bus_call_free(BusCall *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(BusCall *, bus_call_free);
int bus_call_new(Manager *m, sd_bus_message *message, BusCall **ret);
/* What sd-bus sends for a handler that returned r with error (set or not), sent now. */
void bus_call_reply_error(BusCall *c, int r, sd_bus_error *error);
/* The end of a deferred call: the error reply if r < 0 (else the reply was sent), then the call freed. */
void bus_call_finish(BusCall *c, int r, sd_bus_error *error);
