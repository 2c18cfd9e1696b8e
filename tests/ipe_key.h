/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TEST-ONLY key pair for signing IPE policies in tests/ipe.c.  The kernel
 * trusts its certificate because kernel/config/base.config puts
 * kernel/config/ipe-test-cert.pem (the same certificate as IPE_TEST_CERT
 * below) into CONFIG_SYSTEM_TRUSTED_KEYS.  The private key is public: never
 * trust this certificate anywhere but in the QEMU test guest.
 *
 * Made with:
 *   openssl req -x509 -newkey rsa:2048 -nodes -days 36500 \
 *     -subj "/O=fs-verity test suite/CN=IPE policy test key (TEST ONLY)" \
 *     -addext keyUsage=digitalSignature \
 *     -addext basicConstraints=critical,CA:FALSE
 * Keep IPE_TEST_CERT and kernel/config/ipe-test-cert.pem identical.
 */
#ifndef FSV_IPE_KEY_H
#define FSV_IPE_KEY_H

static const char IPE_TEST_KEY[] =
	"-----BEGIN PRIVATE KEY-----\n"
	"MIIEvwIBADANBgkqhkiG9w0BAQEFAASCBKkwggSlAgEAAoIBAQDZv5Ft7iG9yaeV\n"
	"UCv6NqhXmYYQZlg5SaaCbbknglQN6D5NYZRtdMJWqXwqRH/vqcf9cKbltsjClofl\n"
	"Q9LyS4+ABIKwwnz0cp/2xOHqZpOPz0jKB5F13DDFuSjhxMPNSRQZzeBbgroJG0mG\n"
	"5qZQKHqLGFE+c1Y6F3ur7/huhL6eMhAxi6t8RkApkQ6R6dp46YCMiwEWRyXV7yeK\n"
	"JfFp6COR1O/uSe37Syg8nLUt/VV5fceaLK7Qz7XPdY1cKmPam72AftxjPI/ffjMJ\n"
	"hEVu61BWzu3Sz4QCjWox9tJvf6VHjjTTYX2zAZqcCV7kumqxwz1yZGORi/GRlIfT\n"
	"q/vq+RHHAgMBAAECggEAEwg22nuFTXfyHHXjPvDgdxxyTSRBswT1Kp9GhX9TTQ5I\n"
	"ki2xchbrfMGkzaXESbSQSCs8tNIfuApXATrG/FCOz8SuwgTHZ5WBPJ0DlgZQALJz\n"
	"ptzq4awhdmOM52oLjZNFA4BgJMxHUGmnKPhay9TN6TLZHwx1TYlYUOeEa++3hxup\n"
	"BSiOYWBPkTdCZUFoexqXuq1f1r+pqjvEhrfcR1H5AqrcO6tvNm393+IxYz953I5V\n"
	"xa5y18j6lYaRkB8pXHE5Ae9GctcUWSoWxliRliQAbM/+EW8zzKOfeU1pg1egU5J1\n"
	"nuZMyBoqJfmjy4kHsIf10YcRPm19dWgAW/ZVs7OCEQKBgQDvG8QmV8fyylJoQxan\n"
	"q8XCiE+L+9WMFZmITCB+TXOnDiQzgqCR+NPu7By3cpmsXAxWx53KxrVbDac5mDOk\n"
	"+HsuOgXSqM/2aG3+CgA4MgZfNUY5sFn2hzZFoTgShKQnXDgbuWxbuUActmc2GjWO\n"
	"THUM1eV0gxHwu1idYowX86GjWQKBgQDpIYHk2y/Tuddr5DNb28uHgg9jAb4sgP8l\n"
	"e1aSvpMO6XeG3aOQUn+cuygrd5S8TdEnkGDoLSYXgEgpC62+TVnZ/e0nxf5Wgb4q\n"
	"aea3CFsbX1mdCXlCsZgwtPWBLpXJ1znV7rDr4Z21s3tFOYffOxsVU/C6TspGEXAw\n"
	"KWiuPKFaHwKBgQClWQYjncBfXRnvj7Uy7c4r4CdiHhxmaulpH3u428aGV3khRcvU\n"
	"JcYpCo4xLcanMmA2AoRTnWX8OUzSvzW3dz13khhEvQhS1ZR6gF/2fGF7pVOSwSj1\n"
	"Gjulmv8zjxYVQehrA6azJz/2mwx0lVtDtAudfKzYDWtylZuJ+oP2bDvywQKBgQDB\n"
	"aSYdmubD7gNVpF4jkGb7hiCD0DdZLq//BaNeXTMeBP0/63M+UeNDQVZjMXM5AgpK\n"
	"m5J6LLLUfn3fZ6v+HKg1nV/6Rl3qoPsGrxNUuF71h5aOHQT4GuSbTBX91Ys5iBCY\n"
	"ds1a9LPlwgC7/q3FuoCOojQuLR3NIbyEiGYrX2uxmwKBgQCDV94U0Yy3auaf23IO\n"
	"J0hGFzIA9CbSTJ6DZH5CSpHCLQgstdrL4uOwEKv8sUYY8jKMj1FCnvRqQc01bvIa\n"
	"lJMFys8Cx1EkR54xj898WK9L/WGGrC3jwkt37dpa0JNAMvKn3GRK6E3l7HHKBFOV\n"
	"CnbHttKy/ayib5KGuiSCNRDjAQ==\n"
	"-----END PRIVATE KEY-----\n"
	;

static const char IPE_TEST_CERT[] =
	"-----BEGIN CERTIFICATE-----\n"
	"MIIDfzCCAmegAwIBAgIUVNW4TKjOHDW12QLjPhfNKJ0OD5gwDQYJKoZIhvcNAQEL\n"
	"BQAwSTEdMBsGA1UECgwUZnMtdmVyaXR5IHRlc3Qgc3VpdGUxKDAmBgNVBAMMH0lQ\n"
	"RSBwb2xpY3kgdGVzdCBrZXkgKFRFU1QgT05MWSkwIBcNMjYxMjAzMDUxNjIyWhgP\n"
	"MjEyNjExMDkwNTE2MjJaMEkxHTAbBgNVBAoMFGZzLXZlcml0eSB0ZXN0IHN1aXRl\n"
	"MSgwJgYDVQQDDB9JUEUgcG9saWN5IHRlc3Qga2V5IChURVNUIE9OTFkpMIIBIjAN\n"
	"BgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA2b+Rbe4hvcmnlVAr+jaoV5mGEGZY\n"
	"OUmmgm25J4JUDeg+TWGUbXTCVql8KkR/76nH/XCm5bbIwpaH5UPS8kuPgASCsMJ8\n"
	"9HKf9sTh6maTj89IygeRddwwxbko4cTDzUkUGc3gW4K6CRtJhuamUCh6ixhRPnNW\n"
	"Ohd7q+/4boS+njIQMYurfEZAKZEOkenaeOmAjIsBFkcl1e8niiXxaegjkdTv7knt\n"
	"+0soPJy1Lf1VeX3Hmiyu0M+1z3WNXCpj2pu9gH7cYzyP334zCYRFbutQVs7t0s+E\n"
	"Ao1qMfbSb3+lR44002F9swGanAle5LpqscM9cmRjkYvxkZSH06v76vkRxwIDAQAB\n"
	"o10wWzAdBgNVHQ4EFgQUOmMmzTkelRyNmhzJm0nTPPu4Z4UwHwYDVR0jBBgwFoAU\n"
	"OmMmzTkelRyNmhzJm0nTPPu4Z4UwCwYDVR0PBAQDAgeAMAwGA1UdEwEB/wQCMAAw\n"
	"DQYJKoZIhvcNAQELBQADggEBAFYznTD2uewl0EtdwtMSZPhm7bmBxsKOtMqCtpxX\n"
	"qdbrfMo8oB8LH53E0cBRfYVR6MS81FnJi4OW5fmn+69LVa4vWvVk87h1yMgAZw6d\n"
	"3sicmTdGCvmBoxht0biyBIl7NTbIAwldxcXDv9opnhSad+xnp5utcMr59Yq3Ygo6\n"
	"YSGc55cYkZNi/VE7VQURyJlAI/B3DozZgU61a7eUCLkh8yCZwjsw0fAOOaoMlxRs\n"
	"vfgCDp3xE8g4DVN3lHJk+03ipzmp9avMVNp9smZh3KrU8k0CiK75ZVIIbof7BvcP\n"
	"78vHv0cG0OAffNDhwW5XEgd02eQjyq+/57axLE1/1j3qJIA=\n"
	"-----END CERTIFICATE-----\n"
	;

#endif
