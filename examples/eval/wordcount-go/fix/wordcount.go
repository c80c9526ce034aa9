// Package wordcount counts the words of a text.
package wordcount

import "strings"

// Count returns how many times each word occurs in text, words compared lower-cased.
func Count(text string) map[string]int {
	counts := map[string]int{}
	// Fields splits on any run of white space, so no empty "word" is ever counted.
	for _, word := range strings.Fields(text) {
		counts[strings.ToLower(word)]++
	}
	return counts
}
