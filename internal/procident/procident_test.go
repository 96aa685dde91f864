package procident

import (
	"os/exec"
	"testing"
)

func TestAliveFollowsTheProcessNotThePid(t *testing.T) {
	pid, start := Self()
	if start == 0 || !Alive(pid, start) {
		t.Fatalf("this process is not alive: %d %d", pid, start)
	}
	if Alive(pid, start+1) {
		t.Fatal("a different start time counts as the same process")
	}
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cs, err := StartTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if Alive(cmd.Process.Pid, cs) {
		t.Fatal("a killed process is alive")
	}
}
