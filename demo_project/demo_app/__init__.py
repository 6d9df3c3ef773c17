"""Demo shop package served by mcp-project-helper's examples and tests."""
