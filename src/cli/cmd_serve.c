/* storylm serve: the playground, a local web server (src/server). */
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "common.h"
#include "server.h"

extern char **environ;

static int run(int argc, char **argv);
const Command command_serve = {
    "serve", "the playground: the chapter's tools as a local web page", "storylm serve [options]",
    "Serves the playground page (compiled into the binary) and its JSON API on\n"
    "http://HOST:PORT/: type a story or pick a test story, click a token to see where each\n"
    "head looks, switch heads off, rename the hero, let the network write on, or train a\n"
    "network from scratch and watch its heads find their jobs. Every view answers with\n"
    "the JSON of the matching verb's --json (see the README, 'The playground'); OpenAI's\n"
    "clients use /v1/completions (docs/server.md).\n"
    "Listens on loopback only unless --host says otherwise. Models: the files *.safetensors\n"
    "in the working directory, models/, models/snapshots/ and the training folder (new\n"
    "models trained from the page go there; runs are numbered past the files already there).\n"
    "Ctrl-C or SIGTERM stops it; a training run is stopped after a consistent save.\n"
    "Requests must name the server in their Host header (127.0.0.1, localhost or [::1] with\n"
    "the port, or --host); at most 512 connections (256 from one address) are kept, a request\n"
    "has 5 s for its headers and 10 s for its body (docs/server.md).",
    run};

/* SIGINT and SIGTERM blocked in every thread (the server's threads inherit
 * the mask), so that the main thread alone takes them, with sigwait. */
static void block_signals(sigset_t *set) {
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client gone mid-answer is an error to handle, not a death */
}

/* --open: the desktop's browser through xdg-open, when there is one (no
 * shell: the URL is an argument); the URL is printed anyway. */
static void open_browser(const char *url) {
    char *argv[] = {"xdg-open", (char *)url, NULL};
    pid_t pid;
    signal(SIGCHLD, SIG_IGN); /* nobody waits for it: reaped by the system */
    if (posix_spawnp(&pid, "xdg-open", NULL, NULL, argv, environ) != 0)
        fprintf(stderr, "storylm: could not start a browser (no xdg-open); open %s yourself\n", url);
}

/* data/stories.txt here, else the source tree's beside the executable
 * (build/storylm run from elsewhere), else data/stories.txt (the error then
 * names it). */
static const char *default_stories(char *buf, size_t size) {
    const char *here = "data/stories.txt";
    return slm_data_file_exists(here) || !slm_data_file_find(here, buf, size) ? here : buf;
}

typedef struct ServeArgs {
    ServerOptions o;
    StringList data_dirs;
    bool open;
} ServeArgs;

static const Param serve_params[] = {
    {.name = "model",
     .short_name = 'm',
     .type = PARAM_STRING,
     .offset = offsetof(ServeArgs, o.model),
     .meta = "FILE",
     .help = "default model (default: ./" DEFAULT_MODEL_PATH ", else the shipped model)"},
    {.name = "port",
     .type = PARAM_INT,
     .offset = offsetof(ServeArgs, o.port),
     .meta = "N",
     .help = "port to listen on; 0: any free one (printed)",
     .min = 0,
     .max = 65535,
     .def = 8080},
    {.name = "host",
     .type = PARAM_STRING,
     .offset = offsetof(ServeArgs, o.host),
     .meta = "ADDR",
     .help = "address to listen on; 0.0.0.0 opens it to the network",
     .def_string = "127.0.0.1"},
    {.name = "open",
     .type = PARAM_BOOL,
     .offset = offsetof(ServeArgs, open),
     .help = "open the page in the desktop's browser"},
    {.name = "stories",
     .type = PARAM_STRING,
     .offset = offsetof(ServeArgs, o.stories),
     .meta = "FILE",
     .help = "the test stories, names and mean ablation's stories (default: data/stories.txt, here or in the source "
             "tree)"},
    {.name = "data-dir",
     .type = PARAM_STRINGS,
     .offset = offsetof(ServeArgs, data_dirs),
     .meta = "DIR",
     .help = "a folder whose stories files the page may train on (repeat)"},
    {.name = "train-dir",
     .type = PARAM_STRING,
     .offset = offsetof(ServeArgs, o.train_dir),
     .meta = "DIR",
     .help = "where models trained from the page are saved",
     .def_string = "playground-models"},
    {.name = "threads",
     .type = PARAM_INT,
     .offset = offsetof(ServeArgs, o.threads),
     .meta = "N",
     .help = "threads answering requests",
     .min = 1,
     .max = 256,
     .def = 4},
    {.name = "compute-threads",
     .type = PARAM_INT,
     .offset = offsetof(ServeArgs, o.compute_threads),
     .meta = "N",
     .help = "threads a request computes with (its JSON equals a verb's --json at that --threads)",
     .min = 1,
     .max = 256,
     .def = 1},
    {.name = "cache-models",
     .type = PARAM_INT,
     .offset = offsetof(ServeArgs, o.cache_models),
     .meta = "N",
     .help = "loaded models kept in memory",
     .min = 1,
     .max = 64,
     .def = 4},
    {.name = "metrics",
     .type = PARAM_BOOL,
     .offset = offsetof(ServeArgs, o.metrics),
     .help = "answer GET /metrics: requests, latencies and tokens in Prometheus's text format (docs/server.md)"},
};
static const ParamTable serve_table = {"serve", serve_params, PARAMS_COUNT(serve_params)};

static int run(int argc, char **argv) {
    char stories[4200];
    ServeArgs a = {0};
    slm_params_init(&serve_table, &a);
    int rc = args_parse(&command_serve, argc, argv, &serve_table, &a, NULL);
    if (rc) return rc > 0 ? 0 : 2;
    ServerOptions o = a.o;
    const StringList data_dirs = a.data_dirs;
    bool open = a.open;
    if (data_dirs.count > SERVER_MAX_DATA_DIRS)
        return args_usage_error(&command_serve, "at most %d --data-dir", SERVER_MAX_DATA_DIRS);
    for (int i = 0; i < data_dirs.count; i++) o.data_dirs[o.n_data_dirs++] = data_dirs.items[i];
    o.model = cli_model_path(o.model, false);
    if (!o.stories) o.stories = default_stories(stories, sizeof stories);
    cli_set_threads(1);
    sigset_t set;
    block_signals(&set);
    Error e = {0};
    Server *s;
    if (server_start(&s, &o, &e)) return cli_fail(&e);
    char url[300];
    snprintf(url, sizeof url, "http://%s:%d/", strcmp(o.host, "0.0.0.0") == 0 ? "127.0.0.1" : o.host, server_port(s));
    printf("storylm: the playground is at %s (Ctrl-C stops it)\n", url);
    fflush(stdout);
    if (open) open_browser(url);
    int sig;
    sigwait(&set, &sig);
    fprintf(stderr, "storylm: stopping (%s)\n", sig == SIGINT ? "Ctrl-C" : "SIGTERM");
    server_stop(s);
    return 0;
}
