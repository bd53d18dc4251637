/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* What seeklessctl's files share: the options, the verbs, the calls to the daemon (seeklessctl-bus.c) and
 * the pieces plan, optimize and report have in common (seeklessctl-plan.c). Every function here that fails
 * has logged why, once, and returns a negative errno (-EUSAGE for a command-line mistake). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-bus.h>

#include "common/alloc-util.h"
#include "cli/document.h"
#include "common/json.h"
#include "cli/output.h"

/* Width of the keys in the status block: strlen("Filesystems"). */
#define STATUS_KEY_WIDTH 11

/* seeklessctl.c: the command line */
extern JsonFormat arg_json;
extern bool arg_legend;
extern bool arg_all;
extern bool arg_dry_run;
extern bool arg_no_block;
extern bool arg_when_idle;
extern const char *arg_svg;

/* The verbs, as the verb table calls them. */
int verb_status(int argc, char *argv[], void *userdata);
int verb_profiles(int argc, char *argv[], void *userdata);
int verb_show(int argc, char *argv[], void *userdata);
int verb_sessions(int argc, char *argv[], void *userdata);
int verb_forget(int argc, char *argv[], void *userdata);
int verb_plan(int argc, char *argv[], void *userdata);
int verb_optimize(int argc, char *argv[], void *userdata);
int verb_cancel(int argc, char *argv[], void *userdata);
int verb_report(int argc, char *argv[], void *userdata);
int verb_prefetch(int argc, char *argv[], void *userdata);

/* seeklessctl-bus.c */
int acquire_bus(sd_bus **ret);
/* Calls member on the daemon's object without activating the service: if seeklessd is not running we want
 * to say so, not start it. command is the verb (for the permission message), what the action (for the
 * generic one), profile the name a NoSuchProfile error is about, or NULL. types and the arguments after it
 * are the call's input, as for sd_bus_message_append(). */
int call_daemon(sd_bus *bus, const char *interface, const char *member, const char *command, const char *what,
                const char *profile, sd_bus_message **ret_reply, const char *types, ...);
/* The same for a method an older seeklessd may not have: *ret_reply NULL when it does not know it. */
int call_daemon_optional(sd_bus *bus, const char *interface, const char *member, const char *command,
                         const char *what, const char *profile, sd_bus_message **ret_reply, const char *types, ...);
/* Calls Plan, Optimize or OptimizeWhenIdle, whose only input is the list of mount points. */
int call_with_mounts(sd_bus *bus, const char *member, const char *command, const char *what, char **mounts,
                     sd_bus_message **ret_reply);
/* A NAME or mount point from the command line in the escaped form paths have on the bus; NULL on OOM. */
char *arg_to_bus(const char *arg);
/* The mount points given (argv after the verb), absolute and escaped, as a NULL-terminated list. */
int mounts_from_args(char **args, const char *command, char ***ret);

/* Reads the array of elements of signature contents at m (with variant, a variant holding it: a property's
 * value), calling element() for each; element() reads one. Logs nothing. */
int bus_read_array(sd_bus_message *m, bool variant, const char *contents,
                   int (*element)(sd_bus_message *m, void *userdata), void *userdata);
/* A failure to read the daemon's reply (-ENOMEM: "Out of memory."). */
int log_parse_error(int r);
int log_oom(void);


/* seeklessctl-output.c */
int json_writer_new_stdout(JsonWriter **ret);
/* Finishes the document if r >= 0; logs a failure of either. */
int json_done(JsonWriter *w, int r);
int log_table_error(int r);
/* The table as a JSON document (an array of objects) on stdout. */
int print_table_json(const Table *t);
/* The table as text on stdout, with its header unless --no-legend. */
int print_table(const Table *t);
/* A list of recorded things: the table as JSON, or as text between the legend's "No <noun>s recorded
 * yet." (when empty) or "<n> <noun>(s) listed." */
int print_list(const Table *t, const char *noun);
/* The document as text (with the legend unless --no-legend) or JSON, as --json says; d NULL: "Out of
 * memory." (what making it returned). */
int print_doc(const DocNode *d);

/* seeklessctl-plan.c: layout quality, shared by plan and report */

/* One layout quality tuple: see seeklessd(8), LAYOUT QUALITY. */
typedef struct Quality {
        uint64_t files, extents, discontinuities, span;
        double modeled_read_ms;
} Quality;

#define QUALITY_TYPES "ttttd"
#define QUALITY_ARGS(q) &(q)->files, &(q)->extents, &(q)->discontinuities, &(q)->span, &(q)->modeled_read_ms

/* The quality as an object {files, extents, discontinuities, span, modeled_read_ms}; NULL on OOM. */
DocNode *quality_object(const Quality *q);

/* A skipped file: from Plan and Optimize (with retry) or RunFinished (without). Strings point into the
 * message. */
typedef struct Skipped {
        const char *path, *reason;
        int retry;
} Skipped;

/* Logs nothing. */
int read_skipped(sd_bus_message *m, bool with_retry, Skipped **ret, size_t *ret_n);
/* The skipped files as a PATH REASON table (the reason followed by "(will retry)" for a file worth
 * retrying), in JSON objects {"path", "reason"} and with with_retry also "retry". Logs nothing. */
int skipped_table(const Skipped *k, size_t n, bool with_retry, Table **ret);

/* Plan for the mount points (none: every watched one) and print it: plan, and optimize --dry-run. */
int run_plan(sd_bus *bus, char **mounts, const char *command);
