// Package wordcount counts the words of a text.
package wordcount

import "strings"

// Count returns how many times each word occurs in text, words compared lower-cased.
func Count(text string) map[string]int {
	counts := map[string]int{}
	for _, word := range strings.Split(text, " ") {
		counts[strings.ToLower(word)]++
	}
	return counts
}
