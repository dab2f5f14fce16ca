"""Search: translation options, derivations, the stack decoder."""
