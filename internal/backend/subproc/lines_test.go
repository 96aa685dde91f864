package subproc

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

type got struct {
	line string
	cut  bool
}

func lines(t *testing.T, in string, limit int) []got {
	t.Helper()
	var out []got
	if err := readLines(strings.NewReader(in), 16, limit, func(line []byte, cut, _ bool) {
		out = append(out, got{string(line), cut})
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// Lines come without their newlines, exactly at the bound they are whole,
// one byte past it they are cut at the bound and the reading goes on; a
// last line without a newline still comes.
func TestReadLinesAtTheBound(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []got
	}{
		{"a\nbb\n", []got{{"a", false}, {"bb", false}}},
		{"12345678\nnext\n", []got{{"12345678", false}, {"next", false}}},
		{"123456789\nnext\n", []got{{"12345678", true}, {"next", false}}},
		{strings.Repeat("x", 100000) + "\nnext\n", []got{{strings.Repeat("x", 8), true}, {"next", false}}},
		{"\n\nlast", []got{{"", false}, {"", false}, {"last", false}}},
		{"", nil},
	} {
		if g := lines(t, tc.in, 8); fmt.Sprint(g) != fmt.Sprint(tc.want) {
			t.Errorf("%.20q: %v, want %v", tc.in, g, tc.want)
		}
	}
}

// A line longer than the reader's buffer but within the bound comes whole,
// and the lines around it are untouched.
func TestReadLinesPastTheBuffer(t *testing.T) {
	var out []got
	in := "a line longer than sixteen bytes\nshort\n" + strings.Repeat("z", 40) + "\nlast"
	if err := readLines(strings.NewReader(in), 16, 64, func(line []byte, cut, _ bool) {
		out = append(out, got{string(line), cut})
	}); err != nil {
		t.Fatal(err)
	}
	want := []got{{"a line longer than sixteen bytes", false}, {"short", false}, {strings.Repeat("z", 40), false}, {"last", false}}
	if fmt.Sprint(out) != fmt.Sprint(want) {
		t.Fatalf("%v, want %v", out, want)
	}
}

// endless is a reader of x's that allocates nothing.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// A line far over the bound costs about twice the bound in allocations,
// never its own size: 200 MiB read under the 64 MiB bound.
func TestALongLineCostsTheBoundNotItsSize(t *testing.T) {
	r := io.MultiReader(io.LimitReader(endless{}, 200<<20), strings.NewReader("\nok\n"))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var got []int
	if err := readLines(r, 16<<10, DefaultMaxLine, func(line []byte, cut, _ bool) { got = append(got, len(line)) }); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("a 200 MiB line under a %d MiB bound: %d MiB allocated", DefaultMaxLine>>20, allocated>>20)
	if fmt.Sprint(got) != fmt.Sprint([]int{DefaultMaxLine, 2}) || allocated > 2*DefaultMaxLine+(1<<20) {
		t.Fatalf("lines %v, %d MiB allocated", got, allocated>>20)
	}
}
