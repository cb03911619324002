/* The helpers both C targets share (shim/common/): JSON field checks, ROMIO prefixes, mkdir -p. */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "pfs_common.h"

static void test_json_fields(void)
{
    json_t *doc = json_loads("{\"i\": 7, \"r\": 7.0, \"b\": true, \"s\": \"7\", \"neg\": -1, \"extra\": 1}", 0, NULL);
    CHECK(doc != NULL, "test document");
    int64_t i = 0;
    double d = 0;
    int b = 0;
    CHECK(pfs_json_int(json_object_get(doc, "i"), 1, 10, &i) == PFS_JSON_OK && i == 7, "integer in range");
    CHECK(pfs_json_int(json_object_get(doc, "i"), 8, 10, &i) == PFS_JSON_OUT_OF_RANGE, "integer below range");
    CHECK(pfs_json_int(json_object_get(doc, "r"), 1, 10, &i) == PFS_JSON_WRONG_TYPE, "7.0 is not an integer");
    CHECK(pfs_json_int(json_object_get(doc, "b"), 0, 1, &i) == PFS_JSON_WRONG_TYPE, "true is not an integer");
    CHECK(pfs_json_int(NULL, 0, 1, &i) == PFS_JSON_WRONG_TYPE, "missing value");
    CHECK(pfs_json_number(json_object_get(doc, "i"), 0, &d) == PFS_JSON_OK && d == 7.0, "integer as number");
    CHECK(pfs_json_number(json_object_get(doc, "neg"), 0, &d) == PFS_JSON_OUT_OF_RANGE, "below lo");
    CHECK(pfs_json_number(json_object_get(doc, "s"), 0, &d) == PFS_JSON_WRONG_TYPE, "a string is no number");
    CHECK(pfs_json_bool(json_object_get(doc, "b"), &b) == PFS_JSON_OK && b == 1, "bool");
    CHECK(pfs_json_bool(json_object_get(doc, "i"), &b) == PFS_JSON_WRONG_TYPE, "1 is not a bool");
    static const char *const allowed[] = {"i", "r", "b", "s", "neg", NULL};
    const char *bad = pfs_json_unknown_key(doc, allowed);
    CHECK(bad && strcmp(bad, "extra") == 0, "unknown key named, got %s", bad ? bad : "(none)");
    char list[64];
    pfs_json_key_list(allowed, list, sizeof list);
    CHECK(strcmp(list, "i, r, b, s, neg") == 0, "key list: %s", list);
    pfs_json_key_list(allowed, list, 5);
    CHECK(strlen(list) == 4, "key list truncated to the buffer");
    json_decref(doc);
}

static void test_romio_prefix(void)
{
    CHECK(pfs_romio_prefix_len("ufs:/a") == 4, "ufs");
    CHECK(pfs_romio_prefix_len("pvfs2:/mnt/x") == 6, "pvfs2");
    CHECK(pfs_romio_prefix_len("/a/b:c") == 0, "a colon after a slash is part of the path");
    CHECK(pfs_romio_prefix_len("/a") == 0 && pfs_romio_prefix_len("") == 0, "no prefix");
    CHECK(pfs_romio_prefix_len(":/a") == 0, "an empty name is no prefix");
    CHECK(pfs_romio_prefix_len("a-b:/x") == 0, "a name of letters, digits and '_' only");
    CHECK(strcmp(pfs_romio_bare("nfs:/srv/d"), "/srv/d") == 0, "bare");
    CHECK(strcmp(pfs_romio_bare("rel/d"), "rel/d") == 0, "bare of a relative path");
}

static void test_mkdir_p(const char *root)
{
    char dir[512], failed[512];
    snprintf(dir, sizeof dir, "%s/mk/a/b/c", root);
    CHECK(pfs_mkdir_p(dir, failed, sizeof failed) == 0, "mkdir -p %s: %s", dir, strerror(errno));
    struct stat st;
    CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode), "created");
    CHECK(pfs_mkdir_p(dir, failed, sizeof failed) == 0, "existing directories are fine");
    char file[512];
    snprintf(file, sizeof file, "%s/mk/file", root);
    FILE *f = fopen(file, "w");
    if (f)
        fclose(f);
    snprintf(dir, sizeof dir, "%s/mk/file/below", root);
    CHECK(pfs_mkdir_p(dir, failed, sizeof failed) == -1 && errno == ENOTDIR, "a file in the way");
    CHECK(strcmp(failed, dir) == 0, "the failing component is named: %s", failed);
}

int main(int argc, char **argv)
{
    test_json_fields();
    test_romio_prefix();
    test_mkdir_p(argc > 1 ? argv[1] : ".");
    return check_done("test_common");
}
