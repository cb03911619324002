/* The shim's process-wide state (the config, the trace, node placement, stats) and how it reports: one
 * stderr line per message, and errors through the file's MPI error handler. */
#include <stdarg.h>
#include <stdio.h>

#include "shim_internal.h"

pfs_config g_cfg;
int g_active;       /* a valid config with rules or a trace */
int g_trace_on;
pfs_trace g_trace;
int g_world_rank = -1, g_world_size;
int g_node_size = 1;   /* world ranks on this node (MPI_COMM_TYPE_SHARED) */
int g_node_lowest;     /* lowest world rank on this node */
int g_open_traced;
int g_logged_user_hint;
json_t *g_stats;    /* one object per closed replica-set file (stats file) */
char *g_stats_dir;

void say(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "pfsshim: %s\n", line);
}

int file_error(MPI_File fh, int code)
{
    PMPI_File_call_errhandler(fh, code);
    return code;
}
