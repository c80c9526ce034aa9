"""What every answer of the scripted model (tests.helpers.scripted_model) reports, in every wire
API: input (cached included for OpenAI and Gemini, cache reads apart for Anthropic) and output
tokens."""

INPUT_TOKENS = 1200
CACHED_TOKENS = 300
OUTPUT_TOKENS = 45
