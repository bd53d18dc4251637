/* SPDX-License-Identifier: GPL-2.0-or-later */
/* seeklessctl: the options, the verb table and main. Each verb lives in seeklessctl-<verb>.c, the bus
 * helpers they share in seeklessctl-bus.c (seeklessctl.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/bus-names.h"
#include "config.h"
#include "common/json.h"
#include "common/log.h"
#include "common/macro.h"
#include "cli/seeklessctl.h"
#include "cli/verbs.h"

#define EXIT_USAGE 2

JsonFormat arg_json = JSON_OFF;
bool arg_legend = true;
bool arg_all = false;
bool arg_dry_run = false;
bool arg_no_block = false;
bool arg_when_idle = false;
const char *arg_svg = NULL;

static int help(void) {
        printf("%s [OPTIONS...] COMMAND ...\n"
               "\n"
               "Query and manage seeklessd, the boot and launch read-order recorder.\n"
               "\n"
               "Commands:\n"
               "  status               Show the daemon's state (default)\n"
               "  profiles             List recorded profiles\n"
               "  show NAME            Show a profile's files in read order\n"
               "  sessions             List recorded sessions\n"
               "  forget NAME          Delete a profile and its sessions\n"
               "  forget --all         Delete every profile and session\n"
               "  plan [MOUNT...]      Show what an optimization would move, and the layout\n"
               "                       quality expected after it\n"
               "  optimize [MOUNT...]  Lay each profile's files out contiguously, and wait\n"
               "                       for it to finish\n"
               "  optimize --when-idle [MOUNT...]\n"
               "                       Queue it to start by itself when the machine is idle\n"
               "  cancel               Stop the running optimization, drop a queued one\n"
               "  report [NAME]        Show the layout quality of profiles\n"
               "  report NAME --svg=FILE\n"
               "                       Draw the profile's layout before and after the last\n"
               "                       optimization into an SVG picture\n"
               "  prefetch NAME        Read a profile's files and metadata into memory now\n"
               "\n"
               "Options:\n"
               "  -h --help            Show this help\n"
               "     --version         Show package version\n"
               "     --json=pretty|short|off\n"
               "                       Generate JSON output (plain --json: pretty on a terminal,\n"
               "                       short otherwise)\n"
               "     --no-legend       Do not show headers and footers\n"
               "  -a --all             With 'forget': delete every profile\n"
               "     --dry-run         With 'optimize': only show the plan, move nothing\n"
               "     --no-block        With 'optimize': start it and return at once\n"
               "     --when-idle       With 'optimize': queue it until the machine is idle\n"
               "     --svg=FILE        With 'report NAME': write the layout picture to FILE\n"
               "\n"
               "'status' works for every user; the other commands need root.\n"
               "See the seeklessctl(1) man page for details.\n",
               program_invocation_short_name);
        return 0;
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_VERSION = 0x100,
                ARG_JSON,
                ARG_NO_LEGEND,
                ARG_DRY_RUN,
                ARG_NO_BLOCK,
                ARG_WHEN_IDLE,
                ARG_SVG,
        };
        static const struct option options[] = {
                { "help",      no_argument,       NULL, 'h'           },
                { "version",   no_argument,       NULL, ARG_VERSION   },
                { "json",      optional_argument, NULL, ARG_JSON      },
                { "no-legend", no_argument,       NULL, ARG_NO_LEGEND },
                { "all",       no_argument,       NULL, 'a'           },
                { "dry-run",   no_argument,       NULL, ARG_DRY_RUN   },
                { "no-block",  no_argument,       NULL, ARG_NO_BLOCK  },
                { "when-idle", no_argument,       NULL, ARG_WHEN_IDLE },
                { "svg",       required_argument, NULL, ARG_SVG       },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "ha", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        return help();
                case ARG_VERSION:
                        printf("seeklessctl %s\n", PACKAGE_VERSION);
                        return 0;
                case ARG_JSON:
                        if (!optarg) {
                                arg_json = isatty(STDOUT_FILENO) ? JSON_PRETTY : JSON_SHORT;
                                break;
                        }
                        arg_json = json_format_from_string(optarg);
                        if (arg_json < 0) {
                                log_error("Invalid --json= value '%s', expected pretty, short or off.", optarg);
                                verb_usage_hint();
                                return -EUSAGE;
                        }
                        break;
                case ARG_NO_LEGEND:
                        arg_legend = false;
                        break;
                case 'a':
                        arg_all = true;
                        break;
                case ARG_DRY_RUN:
                        arg_dry_run = true;
                        break;
                case ARG_NO_BLOCK:
                        arg_no_block = true;
                        break;
                case ARG_WHEN_IDLE:
                        arg_when_idle = true;
                        break;
                case ARG_SVG:
                        if (isempty(optarg)) {
                                log_error("--svg= needs a file name.");
                                verb_usage_hint();
                                return -EUSAGE;
                        }
                        arg_svg = optarg;
                        break;
                case '?':
                        /* getopt_long() already said what is wrong */
                        verb_usage_hint();
                        return -EUSAGE;
                default:
                        return log_error_errno(SYNTHETIC_ERRNO(EINVAL), "Unhandled option %c.", c);
                }

        if (arg_all && !(optind < argc && streq(argv[optind], "forget"))) {
                log_error("--all is only valid with 'forget'.");
                verb_usage_hint();
                return -EUSAGE;
        }
        if ((arg_dry_run || arg_no_block || arg_when_idle) && !(optind < argc && streq(argv[optind], "optimize"))) {
                log_error("--%s is only valid with 'optimize'.",
                          arg_dry_run ? "dry-run" : arg_no_block ? "no-block" : "when-idle");
                verb_usage_hint();
                return -EUSAGE;
        }
        if (arg_dry_run && arg_when_idle) {
                log_error("--dry-run and --when-idle cannot be combined: --dry-run starts nothing.");
                verb_usage_hint();
                return -EUSAGE;
        }
        if (arg_svg && !(optind < argc && streq(argv[optind], "report"))) {
                log_error("--svg is only valid with 'report'.");
                verb_usage_hint();
                return -EUSAGE;
        }

        return 1;
}

static int run(int argc, char *argv[]) {
        static const Verb verbs[] = {
                { "status",   VERB_ANY, 1, VERB_DEFAULT, verb_status   },
                { "profiles", VERB_ANY, 1, 0,            verb_profiles },
                { "show",     2,        2, 0,            verb_show     },
                { "sessions", VERB_ANY, 1, 0,            verb_sessions },
                { "forget",   VERB_ANY, 2, 0,            verb_forget   },
                { "plan",     VERB_ANY, VERB_ANY, 0,     verb_plan     },
                { "optimize", VERB_ANY, VERB_ANY, 0,     verb_optimize },
                { "cancel",   VERB_ANY, 1, 0,            verb_cancel   },
                { "report",   VERB_ANY, 2, 0,            verb_report   },
                { "prefetch", 2,        2, 0,            verb_prefetch },
                {}
        };
        int r;

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;

        return dispatch_verb(argc, argv, optind, verbs, NULL);
}

int main(int argc, char *argv[]) {
        int r;

        log_open();

        /* Only improves errno mapping of our error names; messages are chosen by name anyway. */
        r = seekless_bus_errors_register();
        if (r < 0)
                (void) log_debug_errno(r, "Failed to register D-Bus error map, ignoring: %m");

        r = run(argc, argv);

        if (fflush(stdout) != 0 || ferror(stdout)) {
                if (r >= 0)
                        r = log_error_errno(errno > 0 ? errno : EIO, "Failed to write output: %m");
        }

        if (r == -EUSAGE)
                return EXIT_USAGE;
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
