package projection

import (
	"strings"
	"unicode/utf8"
)

// Snippet markers: a snippet shows each match of the query between them.
const (
	MarkStart = "«"
	MarkEnd   = "»"
)

// snippetRunes is about how much text a snippet shows, and snippetBefore how much of
// it comes before the first match.
const (
	snippetRunes  = 160
	snippetBefore = 40
)

// matches returns the byte ranges of text that the phrases of c match, in order.
// A prefix-matched CJK character covers that character alone, as the query asked.
func (c compiled) matches(text string) [][2]int {
	toks := tokenize(text)
	var out [][2]int
	for i := range toks {
		for _, p := range c.phrases {
			if r, ok := matchAt(text, toks, i, p); ok {
				out = append(out, r)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	// Sort by start and merge overlaps (matches of several phrases, or CJK pairs).
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j][0] < out[j-1][0]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	merged := out[:1]
	for _, r := range out[1:] {
		last := &merged[len(merged)-1]
		if r[0] <= last[1] {
			last[1] = max(last[1], r[1])
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

func matchAt(text string, toks []token, i int, p phrase) ([2]int, bool) {
	if i+len(p.tokens) > len(toks) {
		return [2]int{}, false
	}
	for j, want := range p.tokens {
		got := toks[i+j]
		last := j == len(p.tokens)-1
		if got.text == want || last && p.prefix && strings.HasPrefix(got.text, want) {
			continue
		}
		return [2]int{}, false
	}
	lastTok := toks[i+len(p.tokens)-1]
	end := lastTok.end
	if lastTok.cjk && lastTok.text != p.tokens[len(p.tokens)-1] {
		// "京*" matched the pair "京都": the match is its first character.
		_, size := utf8.DecodeRuneInString(text[lastTok.start:])
		end = lastTok.start + size
	}
	return [2]int{toks[i].start, end}, true
}

// snippet cuts text around its first match and marks every match inside the cut;
// without a match (the message matched through a name its text only references),
// it is the start of the text.
func snippet(text string, c compiled) string {
	ms := c.matches(text)
	start := 0
	if len(ms) > 0 {
		start = ms[0][0]
		for n := 0; start > 0 && n < snippetBefore; n++ {
			_, size := utf8.DecodeLastRuneInString(text[:start])
			start -= size
		}
	}
	end := start
	for n := 0; end < len(text) && n < snippetRunes; n++ {
		_, size := utf8.DecodeRuneInString(text[end:])
		end += size
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	pos := start
	for _, m := range ms {
		if m[0] < start || m[0] >= end {
			continue
		}
		b.WriteString(text[pos:m[0]])
		b.WriteString(MarkStart)
		b.WriteString(text[m[0]:min(m[1], end)])
		b.WriteString(MarkEnd)
		pos = min(m[1], end)
	}
	b.WriteString(text[pos:end])
	if end < len(text) {
		b.WriteString("…")
	}
	return strings.Join(strings.Fields(b.String()), " ")
}
