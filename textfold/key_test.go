package textfold

import "testing"

func TestKey(t *testing.T) {
	same := []struct{ name, a, b string }{
		{"case and full stop", "Alice prefers window seats on flights.", "alice prefers window seats on flights"},
		{"white space", "  Alice   prefers\twindow seats\non flights ", "Alice prefers window seats on flights"},
		{"full width", "Alice prefers ＷＩＮＤＯＷ seats！", "alice prefers window seats"},
		{"look-alikes", "Alice prefers w\u0456ndow seats", "Alice prefers window seats"},
		{"invisible", "Alice pre\u200bfers window seats", "Alice prefers window seats"},
		{"quotes and brackets", `Alice prefers "window" seats (on flights)`, "Alice prefers window seats on flights"},
		{"typographic apostrophe", "Alice’s manager is Tom", "Alice's manager is Tom"},
		{"chinese punctuation", "项目 Atlas 的状态：开发中。", "项目Atlas的状态开发中"},
		{"chinese spaces", "用户 喜欢 靠窗 的 座位", "用户喜欢靠窗的座位"},
		{"chinese full width comma", "用户喜欢喝茶，不喜欢咖啡", "用户喜欢喝茶,不喜欢咖啡"},
	}
	for _, c := range same {
		if ka, kb := Key(c.a), Key(c.b); ka != kb {
			t.Errorf("%s: %q -> %q, %q -> %q: want one key", c.name, c.a, ka, c.b, kb)
		}
	}
	apart := []struct{ name, a, b string }{
		{"decimal point", "The budget is 3.5k", "The budget is 35k"},
		{"time", "The standup is at 10:30", "The standup is at 1030"},
		{"minus", "The freezer is at -5 degrees", "The freezer is at 5 degrees"},
		{"plus", "Alice writes C++", "Alice writes C"},
		{"possessive", "Alice's manager", "Alices manager"},
		{"version", "The API is v1.2", "The API is v12"},
		{"dollar", "The fee is $5", "The fee is 5"},
		{"different word", "Alice prefers window seats", "Alice prefers aisle seats"},
		{"negation", "Alice eats meat", "Alice eats no meat"},
		{"chinese value", "项目状态是开发中", "项目状态是测试中"},
	}
	for _, c := range apart {
		if ka, kb := Key(c.a), Key(c.b); ka == kb {
			t.Errorf("%s: %q and %q share the key %q: want two", c.name, c.a, c.b, ka)
		}
	}
	if got := Key("Alice prefers window seats on flights."); got != "alice prefers window seats on flights" {
		t.Errorf("Key = %q", got)
	}
}
