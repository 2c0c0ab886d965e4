// SPDX-License-Identifier: GPL-2.0
/* setup_udp_tunnel_sock and udp_tunnel_sock_release take a struct socket (7.x: a struct sock). */
#include <net/udp_tunnel.h>
void p(struct net *net, struct socket *s, struct udp_tunnel_sock_cfg *c)
{
	setup_udp_tunnel_sock(net, s, c);
	udp_tunnel_sock_release(s);
}
