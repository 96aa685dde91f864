package testkit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Postgres is a real PostgreSQL server for tests: its own cluster in a
// temporary folder, run by an unprivileged user (PostgreSQL refuses root),
// listening on a free loopback port and nowhere else.
type Postgres struct {
	bin  string // the folder of initdb, pg_ctl and postgres
	dir  string // the cluster's folder, removed by Close
	host string
	port int
	as   string // the user the server runs as; "" for the current one
	dbs  atomic.Int64
}

// PostgresBin finds PostgreSQL's server programs: MERIDIAN_TEST_PG_BIN,
// else the newest /usr/lib/postgresql/*/bin (Debian's layout), else
// initdb on PATH.
func PostgresBin() (string, error) {
	if d := os.Getenv("MERIDIAN_TEST_PG_BIN"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no PostgreSQL server found (apt-get install postgresql, or set MERIDIAN_TEST_PG_BIN)")
}

// StartPostgres creates a cluster and starts its server on host (a
// loopback address; "" is 127.0.0.1). Close stops it and removes it.
// Used from TestMain, where there is no testing.TB; PostgresServer is
// the per-test form.
func StartPostgres(host string) (*Postgres, error) {
	bin, err := PostgresBin()
	if err != nil {
		return nil, err
	}
	if host == "" {
		host = "127.0.0.1"
	}
	p := &Postgres{bin: bin, host: host}
	if os.Geteuid() == 0 {
		p.as = "postgres" // Debian's package makes this user
		if _, err := user.Lookup(p.as); err != nil {
			return nil, fmt.Errorf("running as root, PostgreSQL needs an unprivileged user: %w", err)
		}
	}
	if p.dir, err = os.MkdirTemp("", "meridian-pg-"); err != nil {
		return nil, err
	}
	if err := p.chown(p.dir); err != nil {
		p.Close()
		return nil, err
	}
	if out, err := p.run("initdb", "-D", p.data(), "-U", "meridian", "-A", "trust", "-E", "UTF8", "--no-sync", "--locale=C"); err != nil {
		p.Close()
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	if p.port, err = freePort(host); err != nil {
		p.Close()
		return nil, err
	}
	if err := p.Start(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// PostgresServer starts a server for one test, stopped when it ends.
// Without PostgreSQL installed the test fails: several-host tests are
// never skipped (./scripts/test installs it).
func PostgresServer(tb testing.TB) *Postgres {
	tb.Helper()
	p, err := StartPostgres("")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Close)
	return p
}

func (p *Postgres) data() string { return filepath.Join(p.dir, "data") }

// Start starts the server (again, after Stop) on its port, waiting until
// it accepts connections.
func (p *Postgres) Start() error {
	opts := fmt.Sprintf("-h %s -p %d -k %s -c max_connections=200 -c listen_addresses=%s", p.host, p.port, p.dir, p.host)
	if out, err := p.run("pg_ctl", "-D", p.data(), "-l", filepath.Join(p.dir, "server.log"), "-o", opts, "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(p.dir, "server.log"))
		return fmt.Errorf("pg_ctl start: %w: %s\n%s", err, out, log)
	}
	return nil
}

// Stop stops the server at once, cutting every connection (the fast
// shutdown mode: what an operator's restart does).
func (p *Postgres) Stop() error {
	if out, err := p.run("pg_ctl", "-D", p.data(), "-m", "fast", "-w", "-t", "60", "stop"); err != nil {
		return fmt.Errorf("pg_ctl stop: %w: %s", err, out)
	}
	return nil
}

// Close stops the server if it runs and removes its cluster.
func (p *Postgres) Close() {
	if _, err := os.Stat(filepath.Join(p.data(), "postmaster.pid")); err == nil {
		_ = p.Stop()
	}
	_ = os.RemoveAll(p.dir)
}

// Addr is the server's host:port.
func (p *Postgres) Addr() string { return net.JoinHostPort(p.host, strconv.Itoa(p.port)) }

// DSN names database db on the server.
func (p *Postgres) DSN(db string) string {
	return fmt.Sprintf("postgres://meridian@%s/%s?sslmode=disable", p.Addr(), db)
}

// NewDatabase creates an empty database for one test and drops it when
// the test ends; it returns its DSN.
func (p *Postgres) NewDatabase(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), p.dbs.Add(1))
	if err := p.exec("CREATE DATABASE " + name); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := p.exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			tb.Logf("drop test database: %v", err)
		}
	})
	return p.DSN(name)
}

// exec runs one statement in the server's postgres database.
func (p *Postgres) exec(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.DSN("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// run runs one of the server's programs as the server's user.
func (p *Postgres) run(prog string, args ...string) ([]byte, error) {
	path := filepath.Join(p.bin, prog)
	var cmd *exec.Cmd
	if p.as != "" {
		cmd = exec.Command("runuser", append([]string{"-u", p.as, "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = p.dir
	// pg_ctl's server outlives the command: its output goes to the log,
	// so nothing holds these pipes open.
	return cmd.CombinedOutput()
}

// chown gives dir to the server's user.
func (p *Postgres) chown(dir string) error {
	if p.as == "" {
		return nil
	}
	u, err := user.Lookup(p.as)
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(dir, uid, gid)
}

// FreeAddr is a loopback host:port nothing listens on now.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	port, err := freePort("127.0.0.1")
	if err != nil {
		tb.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// freePort finds a port nothing listens on at host.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
