// implemented by another engineer
