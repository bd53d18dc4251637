/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Reading and writing the Manager interface's messages (manager-bus-message.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/bus-names.h"
#include "common/escape.h"
#include "common/log.h"
#include "fs/mounts.h"
#include "manager/manager-bus-message.h"

/* File paths are private: only root may see or change them. The D-Bus policy lets anyone call us so that
 * the refusal is a typed error from here, with a message saying why. */
int bus_check_root(sd_bus_message *message, const char *what, sd_bus_error *error) {
        int r;

        /* sd-bus's own privilege test, as used for privileged vtable methods: the caller runs with our
         * UID (root) or holds CAP_SYS_ADMIN. */
        r = sd_bus_query_sender_privilege(message, -1);
        if (r < 0)
                return log_debug_errno(r, "Failed to check caller privileges: %m");
        if (r == 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "Only root may %s: file paths are private.", what);
        return 0;
}

int bus_reply_db_error(sd_bus_error *error, int r, const char *what) {
        if (r == -ENOMEM)
                return r;
        return sd_bus_error_setf(error, SEEKLESS_ERROR_DATABASE, "Failed to %s: %s", what, strerror(-r));
}

/* Paths and profile names cross the bus escaped (escape.h, documented in the XML): lossless for any bytes,
 * and always the valid UTF-8 a D-Bus string must be. */
int bus_append_path(sd_bus_message *reply, const char *path) {
        _cleanup_free_ char *e = path_escape(path);

        if (!e)
                return -ENOMEM;
        return sd_bus_message_append_basic(reply, 's', e);
}

/* The rows of list replies are described by their fields, one letter each: the D-Bus type, or 'p' for a
 * path or profile name, sent escaped as an 's' (bus_append_path()). */
#define ROW_FIELDS_MAX 16

/* "(...)": the D-Bus signature of a row. */
static int row_signature(const char *fields, char ret[static ROW_FIELDS_MAX + 3]) {
        size_t n = strlen(fields);

        if (n > ROW_FIELDS_MAX)
                return -EINVAL;
        ret[0] = '(';
        for (size_t i = 0; i < n; i++)
                ret[i + 1] = fields[i] == 'p' ? 's' : fields[i];
        ret[n + 1] = ')';
        ret[n + 2] = 0;
        return 0;
}

/* Opens the array of rows; sd_bus_message_close_container() or bus_send_rows() closes it. */
int bus_open_rows(sd_bus_message *reply, const char *fields) {
        char signature[ROW_FIELDS_MAX + 3];
        int r;

        r = row_signature(fields, signature);
        if (r < 0)
                return r;
        return sd_bus_message_open_container(reply, 'a', signature);
}

/* One row. The arguments are what sd_bus_message_append() takes for each letter: const char * for s and
 * p, int for b, uint32_t for u, uint64_t for t, double for d. */
int bus_append_row(sd_bus_message *reply, const char *fields, ...) {
        char signature[ROW_FIELDS_MAX + 3];
        va_list ap;
        int r;

        r = row_signature(fields, signature);
        if (r < 0)
                return r;
        signature[strlen(fields) + 1] = 0;      /* the struct's contents: without the parentheses */
        r = sd_bus_message_open_container(reply, 'r', signature + 1);
        va_start(ap, fields);
        for (const char *f = fields; r >= 0 && *f; f++) {
                union { int b; uint32_t u; uint64_t t; double d; } v;
                const void *value = &v;

                switch (*f) {
                case 'p': r = bus_append_path(reply, va_arg(ap, const char *)); continue;
                case 's': value = va_arg(ap, const char *); break;
                case 'b': v.b = va_arg(ap, int); break;
                case 'u': v.u = va_arg(ap, uint32_t); break;
                case 't': v.t = va_arg(ap, uint64_t); break;
                case 'd': v.d = va_arg(ap, double); break;
                default: r = -EINVAL; continue;
                }
                r = sd_bus_message_append_basic(reply, *f, value);
        }
        va_end(ap);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

/* Closes the array of rows and sends the reply, or returns the error r met building it. */
int bus_send_rows(sd_bus_message *reply, int r) {
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* A profile name as received (escaped) into the bytes it stands for. */
int bus_unescape_name(const char *shown, char **ret, sd_bus_error *error) {
        int r;

        if (isempty(shown) || (!streq(shown, "boot") && shown[0] != '/'))
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Invalid profile name '%s': expected \"boot\" or an absolute path.", shown);
        r = path_unescape(shown, ret);
        if (r == -EINVAL)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Invalid profile name '%s': a backslash must start \\\\ or \\xNN.", shown);
        return r;
}

/* The common start of the methods taking a profile name: check the caller, read the name, unescape it.
 * *ret_shown is the name as received (for messages), *ret the bytes it stands for. Returns 0 to go on, or
 * what the handler should return. */
int bus_read_profile_name(sd_bus_message *message, const char *what, const char **ret_shown, char **ret,
                          sd_bus_error *error) {
        const char *shown;
        int r;

        r = bus_check_root(message, what, error);
        if (r != 0)
                return r;
        r = sd_bus_message_read(message, "s", &shown);
        if (r < 0)
                return r;
        r = bus_unescape_name(shown, ret, error);
        if (r != 0)
                return r;
        *ret_shown = shown;
        return 0;
}

/* More mount points than any machine has watched ext4 filesystems; a longer list is refused unread. */
#define MOUNTS_MAX 256

/* Reads the "as" of mount points (an empty list: all), linearly and at most MOUNTS_MAX of them: escaped
 * paths (escape.h), normalised ("/mnt/img/" is "/mnt/img"), a mount point given twice counted once. Call it
 * after bus_check_root(): nothing of an unprivileged caller's message is parsed. */
int bus_read_mounts(sd_bus_message *message, char ***ret, sd_bus_error *error) {
        _cleanup_strv_free_ char **l = NULL;
        const char *s;
        size_t n = 0;
        int r;

        r = sd_bus_message_enter_container(message, 'a', "s");
        if (r < 0)
                return r;
        l = calloc(MOUNTS_MAX + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (size_t given = 0; (r = sd_bus_message_read_basic(message, 's', &s)) > 0; given++) {
                _cleanup_free_ char *path = NULL;

                if (given == MOUNTS_MAX)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Too many mount points: at most %u.", MOUNTS_MAX);
                if (s[0] != '/')
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Invalid mount point '%s': expected an absolute path.", s);
                r = path_unescape(s, &path);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Invalid mount point '%s': a backslash must start \\\\ or \\xNN.", s);
                if (mount_path_normalize(path) < 0)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Invalid mount point '%s': \"..\" is not resolved here.", s);
                if (strv_contains(l, path))
                        continue;
                l[n++] = TAKE_PTR(path);
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(message);
        if (r < 0)
                return r;
        if (n == 0)
                l = (strv_free(l), NULL);
        *ret = TAKE_PTR(l);
        return 0;
}

BusCall *bus_call_free(BusCall *c) {
        if (!c)
                return NULL;
        sd_bus_message_unref(c->message);
        strv_free(c->mounts);
        free(c->name);
        free(c->shown);
        free(c);
        return NULL;
}

int bus_call_new(Manager *m, sd_bus_message *message, BusCall **ret) {
        BusCall *c = calloc(1, sizeof *c);

        if (!c)
                return -ENOMEM;
        c->m = m;
        c->message = sd_bus_message_ref(message);
        *ret = c;
        return 0;
}

/* What sd-bus sends for a handler that returned r with error (set or not), sent now. A call cut short by
 * the daemon stopping gets a plain failure. */
void bus_call_reply_error(BusCall *c, int r, sd_bus_error *error) {
        if (r == -ECANCELED && !sd_bus_error_is_set(error))
                (void) sd_bus_error_set(error, SD_BUS_ERROR_FAILED, "seeklessd is stopping.");
        r = sd_bus_reply_method_errno(c->message, r, error);
        if (r < 0)
                log_debug_errno(r, "Failed to send an error reply, ignoring: %m");
}

/* The end of a deferred call: the reply built by the handler's second half (r >= 0: sent already). */
void bus_call_finish(BusCall *c, int r, sd_bus_error *error) {
        if (r < 0)
                bus_call_reply_error(c, r, error);
        bus_call_free(c);
}
