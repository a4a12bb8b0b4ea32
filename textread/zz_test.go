package textread

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"testing"
)

func TestZZReal(t *testing.T) {
	for _, src := range []string{"topical_chat", "sgd", "crosswoz", "tldr", "cursorrules", "chatgpt_prompts_zh"} {
		f, _ := os.Open("../../shared/data/real/" + src + "/sample.jsonl")
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		other, obf, enc, n := 0, 0, 0, 0
		for sc.Scan() {
			var row struct{ Text string }
			json.Unmarshal(sc.Bytes(), &row)
			n++
			r := Read(row.Text, row.Text)
			if r.Lang == Other {
				other++
				if other <= 5 {
					fmt.Printf("OTHER %s: %.150q\n", src, row.Text)
				}
			}
			for _, x := range r.Readings {
				if x.Kind.Obfuscating() {
					obf++
					if obf <= 8 {
						fmt.Printf("OBF %s %s: %.120q -> %.120q\n", src, x.Kind, row.Text, x.Text)
					}
				} else if x.Kind == Base64 || x.Kind == Hex {
					enc++
					if enc <= 5 {
						fmt.Printf("ENC %s %s: %.120q -> %.120q\n", src, x.Kind, row.Text, x.Text)
					}
				}
			}
		}
		fmt.Println(src, n, "other", other, "obf", obf, "enc", enc)
	}
}
