# A Perl agent: HTTP::Tiny to NCBI's public URL in its code (certificates checked),
# then the canary by IO::Socket::INET. Prints its answer as JSON.
use strict;
use warnings;
use HTTP::Tiny;
use IO::Socket::INET;
use JSON::PP;

my $question = decode_json(do { local $/; <STDIN> });
my $url = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi?db=gene&term=$question->{id}";
my $reply = HTTP::Tiny->new(verify_SSL => 1)->get($url);
my $canary = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$ENV{CANARY_PORT}", Timeout => 2);
my $inner = encode_json({reply => $reply->{content}, connected => ($canary ? JSON::PP::true : JSON::PP::false)});
print encode_json({answer => $inner}), "\n";
