/* A tiny stdio MCP server for the Wine suite (tests/it/wine.rs), built
 * by .ci/windows-build with MinGW: one JSON-RPC message per line. It
 * answers initialize and tools/list (the array in tools.json in its
 * working directory, read at each listing, else none); tools/call
 * "echo" answers at once,
 * "hang" never answers (a request deadline), "crash" exits with code 3
 * (a crash answer). It writes "server up" to stderr when it starts. */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

/* The text of the "id" member (a number or a string), or "null". */
static void id_of(const char *line, char *out, size_t size) {
    const char *at = strstr(line, "\"id\":");
    size_t n = 0;
    if (!at) {
        snprintf(out, size, "null");
        return;
    }
    at += 5;
    while (*at == ' ') at++;
    while (at[n] && at[n] != ',' && at[n] != '}' && n + 1 < size) n++;
    memcpy(out, at, n);
    out[n] = 0;
}

int main(void) {
    char line[65536];
    char id[256];
    setvbuf(stdout, NULL, _IONBF, 0);
    fprintf(stderr, "server up\n");
    while (fgets(line, sizeof line, stdin)) {
        if (!strstr(line, "\"id\"")) continue; /* a notification */
        id_of(line, id, sizeof id);
        if (strstr(line, "\"initialize\"")) {
            printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":\"2025-06-18\","
                   "\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"wine-fixture\",\"version\":\"1\"}}}\n", id);
        } else if (strstr(line, "\"tools/list\"")) {
            static char tools[16384];
            size_t n = 0;
            FILE *file = fopen("tools.json", "rb");
            if (file) {
                n = fread(tools, 1, sizeof tools - 1, file);
                fclose(file);
            }
            tools[n] = 0;
            printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"tools\":%s}}\n", id, n ? tools : "[]");
        } else if (strstr(line, "\"hang\"")) {
            /* never answered */
        } else if (strstr(line, "\"crash\"")) {
            fprintf(stderr, "crashing\n");
            exit(3);
        } else {
            printf("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"echo\"}]}}\n", id);
        }
    }
    return 0;
}
