/* The shim's process-wide state (the config, the trace, node placement, stats) and how it reports: one
 * stderr line per message, and errors through the file's MPI error handler. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

/* MPI error strings end in spaces or a newline; one line each */
static void trim(char *s)
{
    for (char *p = s; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    size_t n = strlen(s);
    while (n && s[n - 1] == ' ')
        s[--n] = '\0';
}

/* What an error class means for a job on a parallel file system, and what to do about it. */
static const char *io_error_advice(int cls)
{
    switch (cls) {
    case MPI_ERR_NO_SPACE:
        return "no space left on the file system: a server's volume is full; free room or grow the servers' "
               "volumes (data written before is intact)";
    case MPI_ERR_QUOTA:
        return "over quota on the file system";
    case MPI_ERR_READ_ONLY:
        return "the file or file system is read-only";
    case MPI_ERR_ACCESS:
        return "permission denied";
    case MPI_ERR_NO_SUCH_FILE:
        return "no such file or directory";
    case MPI_ERR_IO:
        return "I/O error: on OrangeFS a server unreachable, failing or out of space";
    default:
        return "the call failed";
    }
}

int g_said_io_error;

void report_io_error(int is_write, const char *file, int code)
{
    /* Once per process and error class: a job failing on every request must not flood its log. */
    static unsigned char seen[128];
    int cls = 0;
    if (PMPI_Error_class(code, &cls) != MPI_SUCCESS)
        cls = MPI_ERR_OTHER;
    if (__atomic_exchange_n(&seen[(unsigned)cls & 127u], (unsigned char)1, __ATOMIC_RELAXED))
        return;
    char cls_text[MPI_MAX_ERROR_STRING] = "", code_text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (PMPI_Error_string(cls, cls_text, &len) != MPI_SUCCESS)
        cls_text[0] = '\0';
    /* the code's own text has the library's detail (e.g. ROMIO's "No space left on device" for ufs), but
     * not for ROMIO's pvfs2 codes, which read "Undefined dynamic error code": left out then */
    if (PMPI_Error_string(code, code_text, &len) != MPI_SUCCESS || strstr(code_text, "Undefined") ||
        strstr(code_text, "(unknown)()")) /* MPICH's text for a pvfs2 code: the class's text again */
        code_text[0] = '\0';
    trim(cls_text);
    trim(code_text);
    say("rank %d: a %s %s%s failed with error class %d (%s)%s%s: %s", g_world_rank, is_write ? "write" : "read",
        file ? "to " : "through MPI-IO", file ? file : "", cls, cls_text, code_text[0] ? ": " : "", code_text,
        io_error_advice(strstr(code_text, "No space left") ? MPI_ERR_NO_SPACE : cls));
    __atomic_store_n(&g_said_io_error, 1, __ATOMIC_RELAXED);
}

int file_error(MPI_File fh, int code)
{
    PMPI_File_call_errhandler(fh, code);
    return code;
}
