package textread

import "strings"

// englishWords are common English words: function words and the verbs and
// nouns of instructions. They tell English from other Latin languages, and
// a decoded reading (rot13, reversed) from noise.
var englishWords, englishIDs = set(`
a about above after again against all also always am an and any anyone anything are as ask asked at
away back be because been before being below between both but by call can cannot check could data day
delete did do does doing done down during each else email ever every file first for from get give go
going good got had has have having he her here him his how i if ignore in instead instructions into is
it its just keep know last let like make many may me message more most must my need never new next no
nor not nothing now of off old on once one only or other our out over own people please previous
report right rule rules run said same say see send she should show so some something still such system
take tell than that the their them then there these they thing think this those through time to
today told too true under until up us use user very want was way we well were what when where which
while who whom why will with without work would yes yet you your yours
`)

// foreignWords are function words of German, French, Spanish, Portuguese,
// Italian and Dutch that are not English words (so "die", "do", "son" or
// "sin" are left out): two of them in a sentence, and more than English
// ones, make it another language.
var foreignWords, _ = set(`
der das und ist nicht ein eine einen einem einer ohne für auf zu dem des sie du ich wir ihr sich
auch wenn oder aber bitte immer nie niemals darfst kannst muss musst soll sollst darf kann werden
wird wurde alle keine kein nur noch schon sehr von vom zum zur bei nach über dass diese dieser
dieses jetzt hier mehr wie wo warum le la les et est une un avec pas ne vous tu je nous il elle ils
elles sur dans que qui toujours jamais peux peut doit dois faut aux ce cette ces mais ou très sont
être avoir fait faire sera leur leurs votre vos el es una para con por siempre nunca puedes puede
debe debes tú usted pero muy está están su esta este eso cuando donde sobre también todos sí ningún
ninguna ni ser hacer en uma sem não você pode deve da dos na mas muito são isso ao aos pelo pela seu
sua quando onde gli è senza sempre mai puoi può che della delle dei degli sono questo questa anche
tutto tutti nel nella alla dal het een niet zonder voor altijd nooit jij mag moet ook maar wel deze
dit zijn worden wordt naar bij te om hun wat
`)

// maxEnglishWords bounds the English list, so that englishHits can mark
// the words it saw in a bit set on the stack.
const maxEnglishWords = 512

// set returns the words of list as a set, and each word's index.
func set(list string) (map[string]bool, map[string]int) {
	m, ids := map[string]bool{}, map[string]int{}
	for _, w := range strings.Fields(list) {
		if !m[w] {
			m[w] = true
			ids[w] = len(ids)
		}
	}
	return m, ids
}
