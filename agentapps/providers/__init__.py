"""Model providers: thin wrappers around LLM APIs (Bedrock Converse) used by provider skills."""
