/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli.h — the command entry points.  Each takes the arguments after
 * "sluice" (argv[0] is the command name) and returns the process exit code:
 * 0 success, 1 failure, 2 usage error.  Each accepts --help.
 */
#ifndef SL_CLI_H
#define SL_CLI_H

/* sluice's version, named here and nowhere else: the Makefile reads it
 * (make dist names the tarball after it), `sluice version` prints it, and
 * CHANGELOG.md's newest section and the image tags in ops/ name it. */
#define SL_VERSION "0.1.0"

#define SL_EXIT_OK    0
#define SL_EXIT_FAIL  1
#define SL_EXIT_USAGE 2

int sl_app_cmd(int argc, char **argv);     /* run      (app.c)     */
int sl_topics_cmd(int argc, char **argv);  /* topics   (topics.c)  */
int sl_conf_cmd(int argc, char **argv);    /* config   (config.c)  */
int sl_inspect_cmd(int argc, char **argv); /* inspect  (inspect.c) */
int sl_acls_cmd(int argc, char **argv);    /* acls     (acls_cmd.c) */
int sl_dlq_cmd(int argc, char **argv);     /* dlq      (dlq_cmd.c) */

#endif
