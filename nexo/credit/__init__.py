"""CU-02 credit authorization: the officer's queue of orders over the limit, approve and reject."""
