package confedit

import (
	"errors"
	"strings"
	"testing"
)

func TestJSONCKeepsEverythingElse(t *testing.T) {
	src := `// my settings
{
    "theme": "dark", // the one I like
    /* providers I use */
    "provider": {
        "other": { "npm": "x" },
    },
    "list": [1, 2,],
}
`
	edits := []Edit{
		{Path: []string{"provider", "meridian"}, Value: Obj{{"name", "Meridian"}, {"options", Obj{{"baseURL", "http://127.0.0.1:3456/v1"}}}}},
		{Path: []string{"model"}, Value: "meridian/sonnet"},
	}
	out, err := JSONC([]byte(src), edits)
	if err != nil {
		t.Fatal(err)
	}
	want := `// my settings
{
    "theme": "dark", // the one I like
    /* providers I use */
    "provider": {
        "other": { "npm": "x" },
        "meridian": {
            "name": "Meridian",
            "options": {
                "baseURL": "http://127.0.0.1:3456/v1"
            }
        },
    },
    "list": [1, 2,],
    "model": "meridian/sonnet",
}
`
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	again, err := JSONC(out, edits)
	if err != nil || string(again) != string(out) {
		t.Fatalf("second run changed the text (err %v):\n%s", err, again)
	}
}

func TestJSONCReplacesOnlyTheValue(t *testing.T) {
	src := "{\n  \"env\": {\n    \"ANTHROPIC_BASE_URL\": \"http://old\", // set by hand\n    \"OTHER\": \"1\"\n  }\n}"
	out, err := JSONC([]byte(src), []Edit{{Path: []string{"env", "ANTHROPIC_BASE_URL"}, Value: "http://127.0.0.1:3456"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"env\": {\n    \"ANTHROPIC_BASE_URL\": \"http://127.0.0.1:3456\", // set by hand\n    \"OTHER\": \"1\"\n  }\n}"
	if string(out) != want {
		t.Fatalf("got\n%s", out)
	}
}

func TestJSONCNewFileAndOneLineObjects(t *testing.T) {
	out, err := JSONC(nil, []Edit{{Path: []string{"env", "A"}, Value: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "{\n  \"env\": {\n    \"A\": \"1\"\n  }\n}\n" {
		t.Fatalf("new file:\n%s", out)
	}
	out, err = JSONC([]byte(`{"a": 1}`), []Edit{{Path: []string{"b"}, Value: true}})
	if err != nil || string(out) != `{"a": 1, "b": true}` {
		t.Fatalf("one-line object: %s %v", out, err)
	}
	out, err = JSONC([]byte("{\n\t\"a\": {}\n}\n"), []Edit{{Path: []string{"a", "b"}, Value: 2}})
	if err != nil || string(out) != "{\n\t\"a\": {\"b\": 2}\n}\n" {
		t.Fatalf("empty inner object: %q %v", out, err)
	}
}

func TestJSONCArrayUpsert(t *testing.T) {
	src := "{\n  \"customModels\": [\n    { \"model\": \"mine\", \"displayName\": \"Mine\" }\n  ]\n}\n"
	item := Obj{{"model", "sonnet"}, {"displayName", "sonnet (Meridian)"}, {"baseUrl", "http://127.0.0.1:3456"}}
	e := []Edit{{Path: []string{"customModels"}, Value: item, Match: "displayName"}}
	out, err := JSONC([]byte(src), e)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"customModels\": [\n    { \"model\": \"mine\", \"displayName\": \"Mine\" },\n    {\n      \"model\": \"sonnet\",\n      \"displayName\": \"sonnet (Meridian)\",\n      \"baseUrl\": \"http://127.0.0.1:3456\"\n    }\n  ]\n}\n"
	if string(out) != want {
		t.Fatalf("got\n%s", out)
	}
	if again, _ := JSONC(out, e); string(again) != string(out) {
		t.Fatalf("second run changed it:\n%s", again)
	}
	item[2].Value = "http://127.0.0.1:4000"
	moved, err := JSONC(out, e)
	if err != nil || !strings.Contains(string(moved), "4000") || strings.Count(string(moved), "(Meridian)") != 1 {
		t.Fatalf("the element was not replaced in place: %s %v", moved, err)
	}
}

func TestJSONCRefusesWithTheLine(t *testing.T) {
	for name, tc := range map[string]struct {
		src  string
		line int
		msg  string
	}{
		"missing comma":  {"{\n  \"a\": 1\n  \"b\": 2\n}", 3, "expected ','"},
		"unclosed":       {"{\n  \"a\": {\n", 2, "not closed"},
		"duplicate key":  {"{\n  \"a\": 1,\n  \"a\": 2\n}", 3, "appears twice"},
		"bare word":      {"{\n  \"a\": yes\n}", 2, "not a JSON value"},
		"not an object":  {"{\n  \"provider\": \"x\"\n}", 2, "not an object"},
		"array document": {"[1]", 1, "not a JSON object"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := JSONC([]byte(tc.src), []Edit{{Path: []string{"provider", "meridian"}, Value: 1}})
			var e *Error
			if !errors.As(err, &e) || e.Line != tc.line || !strings.Contains(e.Msg, tc.msg) {
				t.Fatalf("got %v, want line %d %q", err, tc.line, tc.msg)
			}
		})
	}
}

func TestDiffIsMinimal(t *testing.T) {
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n"
	b := "1\n2\n3\n4\n5\nsix\n7\n8\n9\n"
	want := "--- a/f\n+++ b/f\n@@ -3,7 +3,7 @@\n 3\n 4\n 5\n-6\n+six\n 7\n 8\n 9\n"
	if got := Diff("f", []byte(a), []byte(b), true); got != want {
		t.Fatalf("got\n%s", got)
	}
	if Diff("f", []byte(a), []byte(a), true) != "" {
		t.Fatal("equal texts have a diff")
	}
	if got := Diff("f", nil, []byte("x\n"), false); got != "--- /dev/null\n+++ b/f\n@@ -0,0 +1,1 @@\n+x\n" {
		t.Fatalf("new file:\n%s", got)
	}
}

func TestJSONCCommentsStayOnTheirLines(t *testing.T) {
	for src, want := range map[string]string{
		"{\n  \"a\": { \"x\": 1 }, // local\n}\n": "{\n  \"a\": { \"x\": 1 }, // local\n  \"b\": 1,\n}\n",
		"{\n  \"a\": 1 // local\n}\n":             "{\n  \"a\": 1, // local\n  \"b\": 1\n}\n",
		"{\n  // nothing yet\n}\n":                "{\n  \"b\": 1\n  // nothing yet\n}\n",
	} {
		out, err := JSONC([]byte(src), []Edit{{Path: []string{"b"}, Value: 1}})
		if err != nil || string(out) != want {
			t.Errorf("%q: got %q (%v), want %q", src, out, err, want)
		}
	}
}
