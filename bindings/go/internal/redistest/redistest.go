// Package redistest gives tests a Redis server: the one MW_REDIS_URL names,
// or a private redis-server on a unix socket.
package redistest

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Ensure sets MW_REDIS_URL to a private redis-server unless it is set, and
// MW_BIND_ADDRESS to 127.0.0.1 unless set. The returned func stops the
// server it started.
func Ensure() (stop func(), err error) {
	if os.Getenv("MW_BIND_ADDRESS") == "" {
		os.Setenv("MW_BIND_ADDRESS", "127.0.0.1")
	}
	if os.Getenv("MW_REDIS_URL") != "" {
		return func() {}, nil
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("MW_REDIS_URL is unset and redis-server is not in PATH")
	}
	dir, err := os.MkdirTemp("", "mw-go-redis-")
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "redis.sock")
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	stop = func() {
		cmd.Process.Kill()
		cmd.Wait()
		os.RemoveAll(dir)
	}
	for i := 0; i < 200; i++ {
		if conn, err := net.Dial("unix", sock); err == nil {
			conn.SetDeadline(time.Now().Add(time.Second))
			conn.Write([]byte("PING\r\n"))
			line, _ := bufio.NewReader(conn).ReadString('\n')
			conn.Close()
			if strings.HasPrefix(line, "+PONG") {
				os.Setenv("MW_REDIS_URL", "unix://"+sock)
				return stop, nil
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	stop()
	return nil, errors.New("redis-server did not start")
}
