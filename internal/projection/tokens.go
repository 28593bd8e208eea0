package projection

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The search index holds tokens made here, the same for SQLite and Postgres, so that a
// query finds the same messages in both:
//
//   - a word (letters, digits and marks of a script that separates words with spaces)
//     is one token, folded: NFKC, lower case, Latin diacritics removed ("Café" → "cafe");
//   - a run of Chinese, Japanese or Korean characters, which no space separates, is
//     indexed as its overlapping pairs of characters followed by its last character
//     alone ("東京都" → "東京" "京都" "都"), so that any substring of a run is a
//     phrase of the index: "京都" is the pair "京都", "東京都" the phrase "東京"
//     "京都", and one character the prefix "京*" (pairs it starts, or a run's end).
//
// A query is a list of chunks separated by spaces ("quoted text" is one chunk); each
// chunk is the phrases of its runs of words and of CJK characters (compile); every
// phrase must match.

// token is one indexed unit of a text: its folded text and the bytes of the source
// text it came from.
type token struct {
	text       string
	start, end int
	cjk        bool
	// runEnd marks a CJK run's last character, indexed alone after its pairs.
	runEnd bool
}

// maxTokenLen bounds a word token (a URL without separators, a base64 blob):
// longer words are cut, so that one message cannot make a huge index term.
const maxTokenLen = 64

// minPrefix is the shortest word matched as a prefix: "ci" is matched whole, where a
// prefix query would walk every term that starts with it.
const minPrefix = 3

// isCJK reports whether r belongs to a script written without spaces between words:
// Han, Hiragana, Katakana, Hangul, and the marks used inside such runs (the long
// vowel mark ー, the iteration mark 々).
func isCJK(r rune) bool {
	if r < 0x2E80 {
		return false
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) || r == 0x30FC || r == 0x3005
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// fold returns the folded form of r: NFKC (full-width Latin to ASCII, half-width
// katakana to full width), lower case, and for Latin letters without their
// diacritics.
func fold(r rune) string {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return string(r)
	}
	s := norm.NFKC.String(string(r))
	s = strings.ToLower(s)
	if unicode.Is(unicode.Latin, []rune(s)[0]) {
		var b strings.Builder
		for _, c := range norm.NFD.String(s) {
			if !unicode.Is(unicode.Mn, c) {
				b.WriteRune(c)
			}
		}
		s = b.String()
	}
	return s
}

// tokenize splits text into index tokens, in order.
func tokenize(text string) []token {
	var out []token
	var word strings.Builder
	wordStart := -1
	flushWord := func(end int) {
		if wordStart >= 0 && word.Len() > 0 {
			w := word.String()
			if len(w) > maxTokenLen {
				w = w[:maxTokenLen]
				for !utf8.ValidString(w) {
					w = w[:len(w)-1]
				}
			}
			out = append(out, token{text: w, start: wordStart, end: end})
		}
		word.Reset()
		wordStart = -1
	}
	// The current CJK run: folded characters and their byte ranges.
	var run []string
	var runPos [][2]int
	flushRun := func() {
		for i := 0; i+1 < len(run); i++ {
			out = append(out, token{text: run[i] + run[i+1], start: runPos[i][0], end: runPos[i+1][1], cjk: true})
		}
		if n := len(run); n > 0 {
			out = append(out, token{text: run[n-1], start: runPos[n-1][0], end: runPos[n-1][1], cjk: true, runEnd: true})
		}
		run, runPos = run[:0], runPos[:0]
	}
	for i, r := range text {
		size := utf8.RuneLen(r)
		if size < 0 {
			size = 1
		}
		switch {
		case isCJK(r):
			flushWord(i)
			run = append(run, fold(r))
			runPos = append(runPos, [2]int{i, i + size})
		case isWordRune(r):
			flushRun()
			if wordStart < 0 {
				wordStart = i
			}
			word.WriteString(fold(r))
		default:
			flushWord(i)
			flushRun()
		}
	}
	flushWord(len(text))
	flushRun()
	return out
}

// tokensText is the index's input for a text: its tokens separated by spaces.
func tokensText(toks []token) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
	}
	return b.String()
}

// phrase is one chunk of a query: tokens that must follow each other, the last one
// matched as a prefix when prefix is set.
type phrase struct {
	tokens []string
	prefix bool
}

// compiled is a parsed search query: every phrase must match.
type compiled struct {
	phrases []phrase
}

// Limits of a query.
const (
	MaxQueryLen    = 512
	maxQueryTokens = 32
)

// ErrBadQuery is matched by the errors of a query that cannot be searched: empty,
// without a letter or digit, or too long.
var ErrBadQuery = errors.New("bad search query")

// compile parses q (see the package's search rules): each chunk is cut into
// phrases, one per run of words (the last word matched as a prefix when it has at
// least minPrefix bytes) and one per CJK run: its pairs of characters, which hold any
// substring of two characters or more; a single CJK character is matched as the
// prefix of the pairs it starts (and of a run's last character).
func compile(q string) (compiled, error) {
	if len(q) > MaxQueryLen {
		return compiled{}, fmt.Errorf("%w: longer than %d bytes", ErrBadQuery, MaxQueryLen)
	}
	var c compiled
	n := 0
	add := func(p phrase) {
		if len(p.tokens) > 0 {
			n += len(p.tokens)
			c.phrases = append(c.phrases, p)
		}
	}
	for _, chunk := range chunks(q) {
		toks := tokenize(chunk)
		var words phrase
		var run []string // a CJK run's pairs, then its last character
		flushWords := func() {
			if k := len(words.tokens); k > 0 {
				words.prefix = len(words.tokens[k-1]) >= minPrefix
				add(words)
			}
			words = phrase{}
		}
		flushRun := func() {
			switch len(run) {
			case 0:
			case 1:
				add(phrase{tokens: run, prefix: true})
			default:
				add(phrase{tokens: run[:len(run)-1]}) // the pairs
			}
			run = nil
		}
		for _, t := range toks {
			if !t.cjk {
				flushRun()
				words.tokens = append(words.tokens, t.text)
				continue
			}
			flushWords()
			run = append(run, t.text)
			if t.runEnd {
				flushRun()
			}
		}
		flushWords()
		flushRun()
	}
	if len(c.phrases) == 0 {
		return c, fmt.Errorf("%w: %q has no letter or digit to search for", ErrBadQuery, q)
	}
	if n > maxQueryTokens {
		return c, fmt.Errorf("%w: more than %d words (a CJK character counts as one)", ErrBadQuery, maxQueryTokens)
	}
	return c, nil
}

// chunks splits q at spaces, keeping "quoted text" together.
func chunks(q string) []string {
	var out []string
	for len(q) > 0 {
		q = strings.TrimLeftFunc(q, unicode.IsSpace)
		if q == "" {
			break
		}
		if q[0] == '"' {
			end := strings.IndexByte(q[1:], '"')
			if end < 0 {
				out = append(out, q[1:])
				break
			}
			out = append(out, q[1:1+end])
			q = q[2+end:]
			continue
		}
		end := strings.IndexFunc(q, unicode.IsSpace)
		if end < 0 {
			end = len(q)
		}
		out = append(out, q[:end])
		q = q[end:]
	}
	return out
}

// fts5 renders c as an SQLite FTS5 query: phrases in double quotes, ANDed.
func (c compiled) fts5() string {
	var b strings.Builder
	for i, p := range c.phrases {
		if i > 0 {
			b.WriteString(" AND ")
		}
		b.WriteString(`"` + strings.Join(p.tokens, " ") + `"`)
		if p.prefix {
			b.WriteByte('*')
		}
	}
	return b.String()
}

// tsquery renders c as a Postgres tsquery literal: lexemes quoted as they are (no
// parser runs on them), phrases with <->, the prefix as :*, phrases ANDed.
func (c compiled) tsquery() string {
	var b strings.Builder
	for i, p := range c.phrases {
		if i > 0 {
			b.WriteString(" & ")
		}
		b.WriteByte('(')
		for j, t := range p.tokens {
			if j > 0 {
				b.WriteString(" <-> ")
			}
			b.WriteString(lexeme(t))
			if p.prefix && j == len(p.tokens)-1 {
				b.WriteString(":*")
			}
		}
		b.WriteByte(')')
	}
	return b.String()
}

// tsvector renders tokens as a Postgres tsvector literal with positions (1-based,
// at most 16383 as Postgres keeps them), so that phrases match as in SQLite.
func tsvector(toks []token) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%d", lexeme(t.text), min(i+1, 16383))
	}
	return b.String()
}

// lexeme quotes a token for tsvector and tsquery input: tokens hold letters, digits
// and marks only, but the quoting rule is applied whole all the same.
func lexeme(t string) string {
	return "'" + lexemeQuote.Replace(t) + "'"
}

var lexemeQuote = strings.NewReplacer(`\`, `\\`, `'`, `''`)
