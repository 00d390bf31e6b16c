.PHONY: tools
tools:
