// A real PostgreSQL server for a test binary: Debian's initdb and pg_ctl
// (/usr/lib/postgresql/15/bin, or $PICKET_PG_BIN) in a temporary directory, on a free loopback
// port, its socket inside that directory; run as the `postgres` (else `nobody`) user when the
// test runs as root, since initdb refuses root. available() is false, with the reason, when
// the binaries are absent: the tests GTEST_SKIP then.
#pragma once

#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace picket::testing {

class PgCluster {
public:
    PgCluster() : dir_("picket-pg") {
        const char* env = std::getenv("PICKET_PG_BIN");
        bin_ = env != nullptr ? env : "/usr/lib/postgresql/15/bin";
        if (!std::filesystem::exists(bin_ + "/initdb") ||
            !std::filesystem::exists(bin_ + "/pg_ctl")) {
            why_ = "PostgreSQL server binaries not found in " + bin_ +
                   " (Debian package postgresql-15)";
            return;
        }
        if (geteuid() == 0) {
            const passwd* pw = getpwnam("postgres");
            if (pw == nullptr) {
                pw = getpwnam("nobody");
            }
            if (pw == nullptr) {
                why_ = "no unprivileged user to run PostgreSQL as";
                return;
            }
            uid_ = pw->pw_uid;
            gid_ = pw->pw_gid;
            if (chown(dir_.path().c_str(), uid_, gid_) != 0) {
                why_ = "cannot chown " + dir_.path().string();
                return;
            }
        }
        port_ = free_port();
        if (run({bin_ + "/initdb", "-D", data(), "-A", "trust", "-U", "picket", "-E", "UTF8",
                 "--locale=C", "--no-sync"}) != 0) {
            why_ = "initdb failed (see " + dir_.file("initdb.log") + ")";
            return;
        }
        if (!start()) {
            why_ = "pg_ctl start failed";
            return;
        }
    }
    ~PgCluster() {
        if (running_) {
            stop();
        }
    }

    bool available() const { return why_.empty(); }
    const std::string& why() const { return why_; }
    int port() const { return port_; }
    std::string dsn(const std::string& db = "postgres") const {
        return "postgresql://picket@127.0.0.1:" + std::to_string(port_) + "/" + db;
    }

    // Fast shutdown (connections are ended, as when the server host goes away).
    bool stop() {
        running_ = false;
        return run({bin_ + "/pg_ctl", "-D", data(), "-m", "fast", "-w", "stop"}) == 0;
    }
    bool start() {
        const std::string opts = "-p " + std::to_string(port_) + " -k " + dir_.path().string() +
                                 " -c listen_addresses=127.0.0.1 -c fsync=off"
                                 " -c full_page_writes=off -c synchronous_commit=off";
        running_ = run({bin_ + "/pg_ctl", "-D", data(), "-o", opts, "-l", dir_.file("server.log"),
                        "-w", "-t", "30", "start"}) == 0;
        return running_;
    }

private:
    std::string data() const { return dir_.file("data"); }

    static int free_port() {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t n = sizeof a;
        int port = 0;
        if (s >= 0 && bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
            getsockname(s, reinterpret_cast<sockaddr*>(&a), &n) == 0) {
            port = ntohs(a.sin_port);
        }
        if (s >= 0) {
            close(s);
        }
        return port;
    }

    // Runs argv as the server's user, output appended to the directory's log; exit status.
    int run(const std::vector<std::string>& argv) {
        const pid_t pid = fork();
        if (pid == 0) {
            const int fd =
                open(dir_.file("initdb.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
            }
            if (uid_ != 0) {
                if (fd >= 0) {
                    (void)fchown(fd, uid_, gid_);
                }
                if (setgroups(0, nullptr) != 0 || setgid(gid_) != 0 || setuid(uid_) != 0) {
                    _exit(126);
                }
            }
            std::vector<char*> args;
            for (const std::string& a : argv) {
                args.push_back(const_cast<char*>(a.c_str()));
            }
            args.push_back(nullptr);
            execv(args[0], args.data());
            _exit(127);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid) {
            return -1;
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }

    TempDir dir_;
    std::string bin_;
    std::string why_;
    uid_t uid_ = 0;
    gid_t gid_ = 0;
    int port_ = 0;
    bool running_ = false;
};

}  // namespace picket::testing
